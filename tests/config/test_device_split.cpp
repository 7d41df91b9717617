// Splits over several devices (placement "split", llama.cpp's --split-mode layer|row with
// --tensor-split). Layer: which layer goes where, config errors, and a decoder split over four
// simulated devices computing what the CPU alone computes while copying exactly the activations that
// cross from one device to the next. Row: the row-split buffer's slices, scatter and gather, and
// the decoder with its matrices' rows over four devices, against the CPU, with the bytes each
// product sends out and gathers back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/row_split_buffer.hpp"
#include "backend/tensor_split.hpp"
#include "backend/tensor_io.hpp"
#include "cpu/cpu_backend.hpp"
#include "config/layer_split.hpp"
#include "report/metrics.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_device.hpp"
#include "test_config_util.hpp"

namespace xb::config {
namespace {

TEST(LayerSplit, FollowsLlamaCppTensorSplit) {
    // Four layers and the output layer: five items, as llama.cpp counts them.
    EXPECT_EQ(split_layer_devices(5, std::vector<double>{3, 1}), (std::vector<int>{0, 0, 0, 0, 1}));
    EXPECT_EQ(split_layer_devices(5, std::vector<double>{1, 1}), (std::vector<int>{0, 0, 0, 1, 1}));
    EXPECT_EQ(split_layer_devices(4, std::vector<double>{1, 0, 1}), (std::vector<int>{0, 0, 2, 2}));
    EXPECT_EQ(split_layer_devices(3, std::vector<double>{2}), (std::vector<int>{0, 0, 0}));
    EXPECT_TRUE(split_layer_devices(0, std::vector<double>{1, 1}).empty());
}

TEST(LayerSplit, RandomRatiosGiveEachDeviceOneRunOfItsShare) {
    std::mt19937 rng(20261124);
    std::uniform_int_distribution<int> devices(1, 8), items(0, 150), zero(0, 4);
    std::uniform_real_distribution<double> ratio(0.05, 10.0);
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<double> ratios(static_cast<size_t>(devices(rng)));
        for (double& r : ratios) r = zero(rng) == 0 ? 0.0 : ratio(rng);
        if (std::all_of(ratios.begin(), ratios.end(), [](double r) { return r == 0; })) ratios.back() = 1.0;
        double total = 0;
        for (double r : ratios) total += r;
        const int n = items(rng);
        const std::vector<int> d = split_layer_devices(n, ratios);
        ASSERT_EQ(static_cast<int>(d.size()), n);  // every item exactly once
        std::vector<int> count(ratios.size(), 0);
        for (int i = 0; i < n; ++i) {
            ASSERT_GE(d[i], 0);
            ASSERT_LT(d[i], static_cast<int>(ratios.size()));
            if (i > 0) {
                ASSERT_LE(d[i - 1], d[i]) << "each device takes one run of consecutive items";
            }
            count[static_cast<size_t>(d[i])] += 1;
        }
        for (size_t k = 0; k < ratios.size(); ++k) {
            if (ratios[k] == 0) {
                EXPECT_EQ(count[k], 0) << "a zero ratio takes nothing";
            }
            EXPECT_LT(std::fabs(count[k] - n * ratios[k] / total), 1.0 + 1e-9) << "device " << k << " of trial " << trial;
        }
    }
}

// The CPU and four simulated devices, in a registry of the test's own.
struct FourSims {
    Registry registry;
    FourSims() {
        cpu::register_cpu_backend(registry);
        sim::register_sim_backend(registry, 4);
    }
};

constexpr int kLayers = 6, kEmbd = 32, kTokens = 5;

std::string split_decoder(const std::string& split, int n_copies, const std::string& extra = "") {
    return R"({"seed": 3, "graph": {"model": "llama_decoder", "params": {"n_layers": )" + std::to_string(kLayers) +
           R"(, "n_embd": )" + std::to_string(kEmbd) + R"(, "n_head": 4, "n_head_kv": 2, "n_ff": 48, "n_tokens": )" +
           std::to_string(kTokens) + R"(, "n_kv": 8, "n_vocab": 40}},
               "placement": {"backends": ["SIM0", "SIM1", "SIM2", "SIM3", "CPU"], "split": )" + split + extra +
           R"(, "scheduler": {"n_copies": )" + std::to_string(n_copies) + "}}}";
}

Result<Model> build_in(const Registry& registry, const std::string& text, const BuildOptions& options = {}) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, parse_config(text, "split.json"));
    return build_model(spec, registry, options);
}

// The split decoder's logits computed by the CPU alone (the split dropped); empty, with a test
// failure, when it cannot be computed.
std::vector<float> logits_on_cpu_alone(const FourSims& four, const std::string& split) {
    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto model = build_in(four.registry, split_decoder(split, 1), cpu);
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    if (!model.is_ok()) return {};
    auto whole = testing::compute_alone(std::move(model).value(), four.registry);
    EXPECT_TRUE(whole.is_ok()) << whole.status().to_string();
    if (!whole.is_ok()) return {};
    auto logits = tensor_get_f32(*(*whole)->model.outputs[0]);
    return logits.is_ok() ? std::move(logits).value() : std::vector<float>{};
}

TEST(LayerSplit, WeightsGoWhereTheSplitSays) {
    FourSims four;
    // 6 layers and the output over ratios 1:2:1:1.5 -> SIM0 layers 0-1, SIM1 2-3, SIM2 4-5, SIM3 the output.
    auto m = build_in(four.registry, split_decoder(R"({"devices": ["SIM0", "SIM1", "SIM2", "SIM3"], "ratios": [1, 2, 1, 1.5]})", 1));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const char* want[] = {"SIM0", "SIM0", "SIM1", "SIM1", "SIM2", "SIM2"};
    for (int il = 0; il < kLayers; ++il) {
        const std::string l = "blk." + std::to_string(il) + ".";
        EXPECT_EQ(m->placement.device_of(*m->find(l + "ffn_up.weight")), want[il]) << il;
        EXPECT_EQ(m->placement.device_of(*m->find(l + "attn_norm.weight")), want[il]) << il;
        EXPECT_EQ(m->placement.device_of(*m->find("cache_k_l" + std::to_string(il))), want[il]) << il;
    }
    EXPECT_EQ(m->placement.device_of(*m->find("output.weight")), "SIM3");
    EXPECT_EQ(m->placement.device_of(*m->find("output_norm.weight")), "SIM3");
    EXPECT_EQ(m->placement.device_of(*m->find("token_embd.weight")), "CPU");

    // With offload_layers, only the last layers are shared (llama.cpp's n_gpu_layers): 3 of 6, split
    // 1:1 as 0, 1/3, 2/3 of them -> SIM0, SIM0, SIM1; the output stays on the host.
    auto last3 = build_in(four.registry, split_decoder(R"({"devices": ["SIM0", "SIM1"]})", 1, R"(, "offload_layers": 3)"));
    ASSERT_TRUE(last3.is_ok()) << last3.status().to_string();
    EXPECT_EQ(last3->placement.device_of(*last3->find("blk.2.ffn_up.weight")), "CPU");
    EXPECT_EQ(last3->placement.device_of(*last3->find("blk.3.ffn_up.weight")), "SIM0");
    EXPECT_EQ(last3->placement.device_of(*last3->find("blk.4.ffn_up.weight")), "SIM0");
    EXPECT_EQ(last3->placement.device_of(*last3->find("blk.5.ffn_up.weight")), "SIM1");
    EXPECT_EQ(last3->placement.device_of(*last3->find("output.weight")), "CPU");

    // --backends without SIM1: its share goes to the others, with a note.
    BuildOptions o;
    o.backends = {"SIM0", "CPU"};
    auto dropped = build_in(four.registry, split_decoder(R"({"devices": ["SIM0", "SIM1"]})", 1), o);
    ASSERT_TRUE(dropped.is_ok()) << dropped.status().to_string();
    for (const WeightPlacement& w : dropped->placement.weights) EXPECT_NE(w.device, "SIM1") << w.tensor->name;
    EXPECT_EQ(dropped->placement.device_of(*dropped->find("blk.5.ffn_up.weight")), "SIM0");
    ASSERT_FALSE(dropped->notes.empty());
    EXPECT_NE(dropped->notes[0].find("SIM1"), std::string::npos) << dropped->notes[0];
}

// Ratios whose sum overflows a double (issue: hostile inputs, round 2): [1e308, 1e308] summed to
// infinity, every share to 0 or NaN, and every layer went to one device without a word. Ratios
// are normalised by the largest first: huge, tiny (subnormal) and ordinary ratios of the same
// proportions split alike.
TEST(LayerSplit, RatiosAtTheEdgesOfADoubleSplitAsTheirProportions) {
    for (const double scale : {1e308, 1.7976931348623157e308, 1e-320, 4.9e-324, 1.0}) {
        SCOPED_TRACE(scale);
        EXPECT_EQ(split_layer_devices(4, std::vector<double>{scale, scale}), (std::vector<int>{0, 0, 1, 1}));
        EXPECT_EQ(split_layer_devices(4, std::vector<double>{scale, scale, scale, scale}), (std::vector<int>{0, 1, 2, 3}));
        const std::vector<double> ends = tensor_split_ends(std::vector<double>{scale, 0, scale});
        EXPECT_EQ(ends, (std::vector<double>{0.5, 0.5, 1.0}));
    }
    EXPECT_EQ(split_layer_devices(4, std::vector<double>{1e308, 1e-308}), (std::vector<int>{0, 0, 0, 0}));

    FourSims four;
    auto m = build_in(four.registry, split_decoder(R"({"devices": ["SIM0", "SIM1"], "ratios": [1e308, 1e308]})", 1));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->placement.device_of(*m->find("blk.0.ffn_up.weight")), "SIM0");
    EXPECT_EQ(m->placement.device_of(*m->find("blk.5.ffn_up.weight")), "SIM1");
}

TEST(LayerSplit, ConfigMistakesAreClear) {
    FourSims four;
    const struct {
        const char* split;
        const char* message;
    } cases[] = {
        {R"({"devices": ["SIM0", "SIM1"], "ratios": [1]})", "one ratio per device: 2 devices, 1 ratios"},
        {R"({"devices": ["SIM0", "SIM0"]})", "device 'SIM0' is listed twice"},
        {R"({"devices": []})", "at least one device"},
        {R"({"devices": ["SIM0"], "ratios": [0]})", "at least one ratio must be positive"},
        {R"({"devices": ["SIM0", "SIM1"], "ratios": [1, -1]})", "ratio -1 is out of range: a ratio is a finite number of at least 0"},
        {R"({"devices": ["SIM0", "SIM1"], "ratios": [1, "1e308 * 10"]})", "ratio 1e308 * 10 is out of range"},
        {R"({"mode": "row", "devices": ["CPU", "SIM1"]})", "CPU cannot compute with weights split by rows"},
        {R"({"mode": "tensor", "devices": ["SIM0"]})", "/placement/split/mode"},
        {R"({"devices": ["SIM7"]})", "device 'SIM7' is not present"},
        {R"({"device": ["SIM0"]})", "/placement/split"},
    };
    for (const auto& c : cases) {
        const Status s = build_in(four.registry, split_decoder(c.split, 1)).status();
        EXPECT_FALSE(s.is_ok()) << c.split;
        EXPECT_NE(s.message().find(c.message), std::string::npos) << c.split << ": " << s.message();
    }
    const Status explicit_graph = parse_config(R"({"tensors": {"x": {"shape": [4], "role": "input"}},
        "graph": [{"name": "y", "op": "sqr", "args": ["x"], "output": true}],
        "placement": {"split": {"devices": ["SIM0"]}}})", "g.json").status();
    EXPECT_NE(explicit_graph.message().find("split needs a model builder"), std::string::npos) << explicit_graph.message();
}

// Over SIM0..SIM3 with uneven ratios (GQA, one and two pipeline copies) the logits equal the CPU's
// alone, and the bytes copied are what crosses: the token embeddings into the first device; from
// each layer device to the next the residual stream and its normalised copy (the norm has no
// weight, so the scheduler leaves it on the device before, as ggml's expands nodes down); into the
// output layer's device only the final norm's input; and the positions, mask and cache cells into
// each device that computes a layer.
TEST(LayerSplit, DecoderOverFourDevicesMatchesTheCpuAndCopiesWhatCrosses) {
    FourSims four;
    const std::string split = R"({"devices": ["SIM0", "SIM1", "SIM2", "SIM3"], "ratios": [1, 2, 1, 1.5]})";
    const std::vector<float> want = logits_on_cpu_alone(four, split);
    ASSERT_FALSE(want.empty());
    for (const int n_copies : {1, 2}) {
        SCOPED_TRACE("n_copies " + std::to_string(n_copies));
        auto model = build_in(four.registry, split_decoder(split, n_copies));
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        auto run = testing::compute_scheduled(std::move(model).value(), four.registry);
        ASSERT_TRUE(run.is_ok()) << run.status().to_string();
        testing::Placed& p = **run;
        const std::vector<float> got = tensor_get_f32(*p.model.outputs[0]).value();
        ASSERT_EQ(got.size(), want.size());
        EXPECT_LT(report::compare(got, want).nmse, 1e-10) << "NMSE of the logits against the CPU alone";

        const size_t activation = size_t{kEmbd} * kTokens * sizeof(float);
        const size_t per_device =
            p.model.find("positions")->nbytes() + p.model.find("kq_mask")->nbytes() + p.model.find("inp_kv_idxs")->nbytes();
        const std::map<std::pair<std::string, std::string>, size_t> want_bytes = {
            {{"CPU", "SIM0"}, activation + per_device},  // token embeddings, positions, mask, cells
            {{"CPU", "SIM1"}, per_device},
            {{"CPU", "SIM2"}, per_device},
            {{"SIM0", "SIM1"}, 2 * activation},  // l_out-1 and its rms_norm
            {{"SIM1", "SIM2"}, 2 * activation},
            {{"SIM2", "SIM3"}, activation},  // the final norm's input: SIM3 holds only the output layer
        };
        EXPECT_EQ(p.sched->report().copy_bytes, want_bytes);
    }
}

// Weights that do not fit one device's memory fit two: one device alone is a clear error naming
// the device, the bytes needed and the bytes free; split over two it computes.
TEST(LayerSplit, AModelTooBigForOneDeviceRunsOverTwo) {
    FourSims four;
    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto on_cpu = build_in(four.registry, split_decoder(R"({"devices": ["SIM0"]})", 1), cpu);
    ASSERT_TRUE(on_cpu.is_ok()) << on_cpu.status().to_string();
    size_t weights = 0;  // those a split places on the devices: all but the token embedding
    for (const WeightPlacement& w : on_cpu->placement.weights) weights += w.tensor->name == "token_embd.weight" ? 0 : w.tensor->nbytes();
    const std::string budget = "memory=" + std::to_string(weights * 8 / 10);
    for (const char* sim : {"SIM0", "SIM1"}) ASSERT_TRUE(four.registry.dev_by_name(sim)->configure(budget).is_ok());

    auto one = testing::compute_scheduled(build_in(four.registry, split_decoder(R"({"devices": ["SIM0"]})", 1)).value(), four.registry);
    ASSERT_FALSE(one.is_ok());
    const std::string msg = one.status().message();
    EXPECT_NE(msg.find("weights on SIM0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("need"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;

    auto two = testing::compute_scheduled(build_in(four.registry, split_decoder(R"({"devices": ["SIM0", "SIM1"]})", 1)).value(),
                                          four.registry);
    ASSERT_TRUE(two.is_ok()) << two.status().to_string();
    testing::expect_finite_outputs((*two)->model);
}

// --- row split -------------------------------------------------------------------------------------

std::vector<Device*> sims(const Registry& registry, int n) {
    std::vector<Device*> out;
    for (int i = 0; i < n; ++i) out.push_back(registry.dev_by_name("SIM" + std::to_string(i)));
    return out;
}

TEST(RowSplit, SlicesFollowTheRatiosInWholeTiles) {
    FourSims four;
    const RowSplitBufferType halves(sims(four.registry, 2), {1, 1});
    EXPECT_EQ(halves.row_bounds(100), (std::vector<int64_t>{0, 48, 100}));
    const RowSplitBufferType three_to_one(sims(four.registry, 2), {3, 1});
    EXPECT_EQ(three_to_one.row_bounds(64), (std::vector<int64_t>{0, 48, 64}));
    const RowSplitBufferType skip(sims(four.registry, 3), {1, 0, 1});
    EXPECT_EQ(skip.row_bounds(64), (std::vector<int64_t>{0, 32, 32, 64}));
    EXPECT_EQ(halves.row_bounds(10), (std::vector<int64_t>{0, 0, 10}));  // less than a tile: the last takes it

    std::mt19937 rng(11);
    std::uniform_int_distribution<int> rows_of(0, 5000), n_of(1, 4);
    std::uniform_real_distribution<double> ratio(0.0, 5.0);
    for (int trial = 0; trial < 2000; ++trial) {
        const int n = n_of(rng);
        std::vector<double> ratios(static_cast<size_t>(n));
        for (double& r : ratios) r = ratio(rng);
        ratios[0] += 0.01;  // a positive sum
        double total = 0;
        for (double r : ratios) total += r;
        const RowSplitBufferType type(sims(four.registry, n), ratios);
        const int64_t rows = rows_of(rng);
        const std::vector<int64_t> b = type.row_bounds(rows);
        ASSERT_EQ(b.size(), static_cast<size_t>(n) + 1);
        ASSERT_EQ(b.front(), 0);
        ASSERT_EQ(b.back(), rows);  // every row exactly once
        double running = 0;
        for (int d = 0; d < n; ++d) {
            ASSERT_LE(b[d], b[d + 1]);
            running += ratios[static_cast<size_t>(d)];
            if (d + 1 < n) {
                EXPECT_EQ(b[d + 1] % RowSplitBufferType::kRowGranularity == 0 || b[d + 1] == rows, true) << b[d + 1];
                EXPECT_LE(std::fabs(static_cast<double>(b[d + 1]) - rows * running / total),
                          RowSplitBufferType::kRowGranularity + 1.0);
            }
        }
    }
}

// The same ratios for rows: the product of the row count and a NaN share was converted to an
// integer (undefined behaviour, flagged by UBSan) and all rows went to one device.
TEST(RowSplit, RatiosAtTheEdgesOfADoubleSplitAsTheirProportions) {
    FourSims four;
    for (const double scale : {1e308, 1.7976931348623157e308, 1e-320, 1.0}) {
        SCOPED_TRACE(scale);
        const RowSplitBufferType halves(sims(four.registry, 2), {scale, scale});
        EXPECT_EQ(halves.row_bounds(64), (std::vector<int64_t>{0, 32, 64}));
        EXPECT_EQ(halves.row_bounds(INT64_MAX / 2).back(), INT64_MAX / 2);
    }
    // Any shares at all (the parser refuses NaN and infinity; the type holds up to them anyway):
    // bounds never decrease and never pass the row count.
    for (const std::vector<double>& ratios : {std::vector<double>{std::nan(""), 1}, std::vector<double>{INFINITY, 1},
                                              std::vector<double>{0, 0}, std::vector<double>{-1, 1}}) {
        const RowSplitBufferType type(sims(four.registry, 2), ratios);
        const std::vector<int64_t> b = type.row_bounds(64);
        EXPECT_TRUE(b.front() == 0 && b.back() == 64 && std::is_sorted(b.begin(), b.end())) << b[1];
    }
}

TEST(RowSplit, ScatterAndGatherEveryByte) {
    FourSims four;
    RowSplitBufferType type(sims(four.registry, 3), {2, 1, 1});
    Context ctx;
    Tensor* w = ctx.new_tensor(DType::F32, {37, 100});
    std::vector<Tensor*> one = {w};
    auto buffer = alloc_tensors(one, type);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    std::vector<float> values(37 * 100);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f - 11.0f;
    ASSERT_TRUE(tensor_set(*w, values.data(), 0, values.size() * 4).is_ok());
    std::vector<float> back(values.size());
    ASSERT_TRUE(tensor_get(*w, back.data(), 0, back.size() * 4).is_ok());
    EXPECT_EQ(back, values);
    // Each slice holds its rows, on its device.
    const auto* slices = row_split_storage(*w)->slices(*w);
    ASSERT_NE(slices, nullptr);
    ASSERT_EQ(slices->size(), 3u);
    const int64_t want_bounds[] = {48, 64, 100};
    for (size_t d = 0; d < 3; ++d) {
        const RowSlice& s = *(*slices)[d];
        EXPECT_EQ(s.row_end, want_bounds[d]);
        EXPECT_EQ(&s.buffer->type().device(), four.registry.dev_by_name("SIM" + std::to_string(d)));
        std::vector<float> rows(static_cast<size_t>(s.tensor.nelements()));
        ASSERT_TRUE(tensor_get(s.tensor, rows.data(), 0, rows.size() * 4).is_ok());
        EXPECT_TRUE(std::equal(rows.begin(), rows.end(), values.begin() + s.row_begin * 37));
    }
    // A range across two slices at odd offsets, and a memset.
    const std::vector<float> patch(200, 7.0f);
    ASSERT_TRUE(tensor_set(*w, patch.data(), (47 * 37 + 5) * 4, patch.size() * 4).is_ok());
    std::copy(patch.begin(), patch.end(), values.begin() + 47 * 37 + 5);
    ASSERT_TRUE(tensor_get(*w, back.data(), 0, back.size() * 4).is_ok());
    EXPECT_EQ(back, values);
    ASSERT_TRUE(tensor_memset(*w, 0, 60 * 37 * 4, 10 * 37 * 4).is_ok());
    ASSERT_TRUE(tensor_get(*w, back.data(), 0, back.size() * 4).is_ok());
    for (int64_t i = 60 * 37; i < 70 * 37; ++i) EXPECT_EQ(back[static_cast<size_t>(i)], 0.0f) << i;
}

// The bytes a row-split product moves, by the model: for each product of a split weight, each
// device but the main one gets the activations and sends its rows of the result back.
size_t row_split_peer_bytes(const Model& m) {
    size_t bytes = 0;
    for (const Tensor* n : m.graph.nodes()) {
        if (n->op != Op::MulMat || row_split_storage(*n->src[0]) == nullptr) continue;
        for (const auto& s : *row_split_storage(*n->src[0])->slices(*n->src[0])) {
            if (s->device == 0) continue;
            bytes += n->src[1]->nbytes() + static_cast<size_t>(s->row_end - s->row_begin) * n->ne[1] * sizeof(float);
        }
    }
    return bytes;
}

// Over SIM0..SIM3 with uneven ratios (GQA, one and two pipeline copies): every matrix's rows are
// shared, the logits equal the CPU's alone, and SIM0's peer copies are the products' broadcasts
// and gathers.
TEST(RowSplit, DecoderOverFourDevicesMatchesTheCpuAndMovesWhatTheProductsNeed) {
    FourSims four;
    const std::string split = R"({"mode": "row", "devices": ["SIM0", "SIM1", "SIM2", "SIM3"], "ratios": [1, 2, 1, 1.5]})";
    const std::vector<float> want = logits_on_cpu_alone(four, split);
    ASSERT_FALSE(want.empty());
    for (const int n_copies : {1, 2}) {
        SCOPED_TRACE("n_copies " + std::to_string(n_copies));
        auto model = build_in(four.registry, split_decoder(split, n_copies));
        ASSERT_TRUE(model.is_ok()) << model.status().to_string();
        int shared = 0;
        for (const WeightPlacement& w : model->placement.weights) {
            const bool matrix = w.tensor->name.find("norm") == std::string::npos && w.tensor->name.find("cache") == std::string::npos &&
                                w.tensor->name != "token_embd.weight";
            EXPECT_EQ(w.row_split, matrix) << w.tensor->name;
            if (w.tensor->name != "token_embd.weight") {
                EXPECT_EQ(w.device, "SIM0") << w.tensor->name;
            }
            shared += w.row_split ? 1 : 0;
        }
        EXPECT_EQ(shared, 7 * kLayers + 1);  // q, k, v, o, gate, up, down per layer, and the output
        auto run = testing::compute_scheduled(std::move(model).value(), four.registry);
        ASSERT_TRUE(run.is_ok()) << run.status().to_string();
        testing::Placed& p = **run;
        const std::vector<float> got = tensor_get_f32(*p.model.outputs[0]).value();
        ASSERT_EQ(got.size(), want.size());
        EXPECT_LT(report::compare(got, want).nmse, 1e-10) << "NMSE of the logits against the CPU alone";
        sim::SimBackend* sim0 = nullptr;
        for (const auto& b : p.backends) {
            if (std::string(b->name()) == "SIM0") sim0 = dynamic_cast<sim::SimBackend*>(b.get());
        }
        ASSERT_NE(sim0, nullptr);
        sim0->synchronize();
        EXPECT_EQ(sim0->stats().peer.bytes, row_split_peer_bytes(p.model));
        EXPECT_GT(sim0->stats().peer.bytes, 0u);
        // What the tools report as the row split's copies (row_split_copies): the same bytes, each
        // between the main device and another slice's.
        size_t reported = 0;
        for (const auto& [pair, c] : row_split_copies(p.model.graph)) {
            EXPECT_TRUE((pair.first == "SIM0") != (pair.second == "SIM0")) << pair.first << "->" << pair.second;
            EXPECT_GT(c.count, 0);
            reported += c.bytes;
        }
        EXPECT_EQ(reported, sim0->stats().peer.bytes);
    }
}

TEST(RowSplit, AModelTooBigForOneDeviceRunsWithItsRowsOverTwo) {
    FourSims four;
    BuildOptions cpu;
    cpu.backends = {"CPU"};
    auto on_cpu = build_in(four.registry, split_decoder(R"({"mode": "row", "devices": ["SIM0"]})", 1), cpu);
    ASSERT_TRUE(on_cpu.is_ok()) << on_cpu.status().to_string();
    size_t weights = 0;
    for (const WeightPlacement& w : on_cpu->placement.weights) weights += w.tensor->name == "token_embd.weight" ? 0 : w.tensor->nbytes();
    const std::string budget = "memory=" + std::to_string(weights * 8 / 10);
    for (const char* sim : {"SIM0", "SIM1"}) ASSERT_TRUE(four.registry.dev_by_name(sim)->configure(budget).is_ok());
    auto one = testing::compute_scheduled(build_in(four.registry, split_decoder(R"({"mode": "row", "devices": ["SIM0"]})", 1)).value(),
                                          four.registry);
    ASSERT_FALSE(one.is_ok());
    EXPECT_NE(one.status().message().find("SIM0"), std::string::npos) << one.status().message();
    auto two = testing::compute_scheduled(
        build_in(four.registry, split_decoder(R"({"mode": "row", "devices": ["SIM0", "SIM1"]})", 1)).value(), four.registry);
    ASSERT_TRUE(two.is_ok()) << two.status().to_string();
    testing::expect_finite_outputs((*two)->model);
}

}  // namespace
}  // namespace xb::config
