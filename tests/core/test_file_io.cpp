// Files that cannot be opened, created, read or written: every message names the file, what could
// not be done and the operating system's reason (core/file_io.hpp), through the readers and
// writers of configs, .npy and GGUF files too.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <unistd.h>

#include "config/config_parse.hpp"
#include "formats/gguf.hpp"
#include "formats/npy.hpp"
#include "core/file_io.hpp"

namespace xb {
namespace {

std::string temp_dir() { return std::filesystem::temp_directory_path().string(); }

std::string missing_folder_file(const std::string& name) {
    return temp_dir() + "/xb-no-such-folder-" + std::to_string(::getpid()) + "/" + name;
}

TEST(FileIo, MissingFileIsNotFoundWithTheReason) {
    const std::string path = missing_folder_file("a.json");
    const Status s = open_for_reading(path, "config file").status();
    EXPECT_EQ(s.code(), StatusCode::NotFound);
    EXPECT_EQ(s.message(), path + ": cannot open the config file: No such file or directory");
}

TEST(FileIo, AFolderIsRefusedWhenOpenedForReading) {
    const Status s = open_for_reading(temp_dir(), "config file").status();
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(s.message(), temp_dir() + ": cannot open the config file: Is a directory");
}

TEST(FileIo, CreatingInAMissingFolderOrOnAFolderSaysWhy) {
    const std::string path = missing_folder_file("out.json");
    EXPECT_EQ(open_for_writing(path, "report").status().message(),
              path + ": cannot create the report: No such file or directory");
    EXPECT_EQ(open_for_writing(temp_dir(), "report").status().message(),
              temp_dir() + ": cannot create the report: Is a directory");
}

TEST(FileIo, ReasonOnlyWhenTheSystemGaveOne) {
    EXPECT_EQ(file_error("f", "cannot read the file", 0).message(), "f: cannot read the file");
    EXPECT_EQ(file_error("f", "cannot read the file", EACCES).message(), "f: cannot read the file: Permission denied");
    EXPECT_EQ(file_error("f", "x", ENOTDIR).code(), StatusCode::NotFound);
}

// The readers and writers of the formats the tools open.
TEST(FileIo, ConfigNpyAndGgufReadersSayWhy) {
    EXPECT_EQ(config::load_config(temp_dir()).status().message(),
              temp_dir() + ": cannot open the config file: Is a directory");
    const std::string npy = missing_folder_file("x.npy");
    EXPECT_EQ(read_npy(npy).status().message(), npy + ": cannot open the .npy file: No such file or directory");
    EXPECT_EQ(GgufReader::open(temp_dir()).status().message(), temp_dir() + ": cannot open the GGUF file: Is a directory");
}

TEST(FileIo, NpyAndGgufWritersSayWhy) {
    NpyArray a;
    a.shape = {2};
    a.data.resize(8);
    const std::string npy = missing_folder_file("x.npy");
    EXPECT_EQ(write_npy(npy, a).message(), npy + ": cannot create the .npy file: No such file or directory");
    const std::string gguf = missing_folder_file("w.gguf");
    EXPECT_EQ(GgufWriter().write(gguf).message(), gguf + ": cannot create the GGUF file: No such file or directory");
    if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to fill";
    // The data does not fit in /dev/full: the write, not the open, fails.
    a.data.resize(1 << 20);
    a.shape = {1 << 18};
    EXPECT_EQ(write_npy("/dev/full", a).message(), "/dev/full: cannot write the .npy file: No space left on device");
}

}  // namespace
}  // namespace xb
