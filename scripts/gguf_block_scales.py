"""Where the newer GGUF block formats keep their f16 super-block scale d, for the fixture scripts
that write random valid blocks (scripts/quant_fixtures.py, scripts/model_fixtures.py)."""
import numpy as np
from gguf import GGMLQuantizationType as T

# Byte offsets of d in the formats that store it as one f16 field; q2_K's dmin follows its d.
F16_SCALE_AT = {T.Q2_K: 80, T.Q3_K: 108, T.IQ2_XXS: 0, T.IQ2_XS: 0, T.IQ2_S: 0, T.IQ3_XXS: 0, T.IQ3_S: 0,
                T.IQ1_S: 0, T.IQ4_NL: 0, T.IQ4_XS: 0}
Q2_K_DMIN_AT = 82
# iq1_m spreads its f16 over the top nibbles of its four scale words (bytes 48..55).
HAS_F16_SCALE = set(F16_SCALE_AT) | {T.IQ1_M}


def put_f16_scale(raw, qtype, bits):
    """Writes the f16 bit patterns `bits` (uint16, one per block) as the scale d of the blocks `raw`
    (uint8, one row per block) of qtype."""
    if qtype == T.IQ1_M:
        words = raw[:, 48:56].copy().view(np.uint16)
        for i in range(4):
            words[:, i] = (words[:, i] & 0x0FFF) | (((bits >> (4 * i)) & 0x0F) << 12)
        raw[:, 48:56] = words.view(np.uint8)
        return
    at = F16_SCALE_AT[qtype]
    raw[:, at:at + 2] = bits.view(np.uint8).reshape(-1, 2)
