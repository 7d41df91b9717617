#include "config/expr.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include "config/config_error.hpp"
#include "core/message_text.hpp"

namespace xb::config {

namespace {

// Expressions are short formulas: longer or deeper text is a mistake (or hostile), and the
// recursive descent must not run out of stack on it.
constexpr size_t kMaxExprLength = 4096;
constexpr int kMaxExprDepth = 64;

// Recursive descent over the text; the first error stops it.
class Parser {
public:
    Parser(std::string_view text, const ParamList& params) : text_(text), params_(params) {}

    Result<double> run() {
        if (text_.size() > kMaxExprLength) {
            return Status(StatusCode::InvalidArgument, "expression of " + std::to_string(text_.size()) + " characters (at most " +
                                                           std::to_string(kMaxExprLength) + "): " + quoted_name(text_));
        }
        double v = expr();
        skip_space();
        if (error_.empty() && pos_ < text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
        if (!error_.empty()) {
            return Status(StatusCode::InvalidArgument,
                          "bad expression " + quoted_name(text_) + ": " + error_);
        }
        return v;
    }

private:
    double expr() {
        double v = term();
        for (;;) {
            if (eat('+')) {
                v += term();
            } else if (eat('-')) {
                v -= term();
            } else {
                return v;
            }
        }
    }

    double term() {
        double v = factor();
        for (;;) {
            if (eat('*')) {
                v *= factor();
            } else if (eat('/')) {
                const double d = factor();
                if (d == 0.0) return fail("division by zero");
                v /= d;
            } else if (eat('%')) {
                const double d = factor();
                if (d == 0.0 || d != std::trunc(d) || v != std::trunc(v)) return fail("'%' needs integers and a non-zero divisor");
                v = std::fmod(v, d);
            } else {
                return v;
            }
        }
    }

    double factor() {
        if (!error_.empty()) return 0.0;
        // Signs and parentheses nest: each takes a level.
        if (depth_ >= kMaxExprDepth) return fail("nested more than " + std::to_string(kMaxExprDepth) + " levels deep");
        if (eat('-')) return -nested([this] { return factor(); });
        if (eat('+')) return nested([this] { return factor(); });
        if (eat('(')) {
            const double v = nested([this] { return expr(); });
            if (!eat(')')) return fail("missing ')'");
            return v;
        }
        skip_space();
        if (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) return number();
        if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) return name();
        return fail(pos_ < text_.size() ? "unexpected '" + std::string(1, text_[pos_]) + "'" : "unexpected end");
    }

    template <typename F>
    double nested(F parse) {
        ++depth_;
        const double v = parse();
        --depth_;
        return v;
    }

    double number() {
        double v = 0.0;
        const char* begin = text_.data() + pos_;
        const auto [end, ec] = std::from_chars(begin, text_.data() + text_.size(), v);
        if (ec != std::errc()) return fail("bad number");
        pos_ += static_cast<size_t>(end - begin);
        return v;
    }

    double name() {
        const size_t begin = pos_;
        while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
        const std::string_view id = text_.substr(begin, pos_ - begin);
        for (const auto& [key, value] : params_) {
            if (key == id) return value;
        }
        std::vector<std::string> known;
        for (const auto& p : params_) known.push_back(p.first);
        return fail(unknown_name("param", id, known) + " (params: " + join_names(known) + ")");
    }

    bool eat(char c) {
        skip_space();
        if (error_.empty() && pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }

    double fail(std::string why) {
        if (error_.empty()) error_ = std::move(why);
        pos_ = text_.size();
        return 0.0;
    }

    std::string_view text_;
    const ParamList& params_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::string error_;
};

}  // namespace

Result<double> eval_expr(std::string_view text, const ParamList& params) { return Parser(text, params).run(); }

}  // namespace xb::config
