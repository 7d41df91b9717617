#include "config/token_file.hpp"

#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/names.hpp"

namespace xb::config {

namespace {

Status bad_file(const std::string& path, const std::string& why) {
    return Status(StatusCode::InvalidArgument, path + ": " + why);
}

// One id of at most int32's range, from the whole of `word`.
Result<int32_t> token_id(const std::string& word) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) {
        return Status(StatusCode::InvalidArgument, "'" + excerpt(word) + "' is not a token id");
    }
    if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
        return Status(StatusCode::InvalidArgument, "token id " + word + " is out of range (0 to 2147483647)");
    }
    return static_cast<int32_t>(v);
}

Result<std::vector<int32_t>> from_json(const nlohmann::json& j) {
    if (!j.is_array()) return Status(StatusCode::InvalidArgument, "expected a JSON array of token ids");
    std::vector<int32_t> ids;
    for (size_t i = 0; i < j.size(); ++i) {
        const nlohmann::json& v = j[i];
        if (!v.is_number_integer()) {
            return Status(StatusCode::InvalidArgument, "entry " + std::to_string(i) + " is " + excerpt(v.dump()) +
                                                           ", not a token id");
        }
        XB_ASSIGN_OR_RETURN(const int32_t id, token_id(v.dump()));  // an integer's text, as a line's word
        ids.push_back(id);
    }
    return ids;
}

Result<std::vector<int32_t>> from_words(std::istream& in) {
    std::vector<int32_t> ids;
    std::string word;
    int64_t line_number = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_number;
        std::istringstream words(line);
        while (words >> word) {
            auto id = token_id(word);
            if (!id.is_ok()) return Status(StatusCode::InvalidArgument, "line " + std::to_string(line_number) + ": " +
                                                                            id.status().message());
            ids.push_back(*id);
        }
    }
    return ids;
}

}  // namespace

Result<std::vector<int32_t>> read_token_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Status(StatusCode::NotFound, path + ": cannot open the token file");
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    const size_t first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return bad_file(path, "the token file is empty");
    Result<std::vector<int32_t>> ids = Status(StatusCode::Internal, "unread");
    if (s[first] == '[') {
        const nlohmann::json j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) return bad_file(path, "not valid JSON (a token file is a JSON array or one id a line)");
        ids = from_json(j);
    } else {
        std::istringstream words(s);
        ids = from_words(words);
    }
    if (!ids.is_ok()) return bad_file(path, ids.status().message());
    if (ids->empty()) return bad_file(path, "the token file holds no token ids");
    return ids;
}

Result<std::vector<int32_t>> parse_token_list(const std::string& text) {
    std::vector<int32_t> ids;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        XB_ASSIGN_OR_RETURN(const int32_t id, token_id(word));
        ids.push_back(id);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return ids;
}

}  // namespace xb::config
