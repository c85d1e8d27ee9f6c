// The corpus of crafted bad safetensors files (bad/*.safetensors, written by bad/make_bad_files.py):
// the reader rejects each with SafetensorsError, and every command exits 3 with a message,
// never crashing.
#include <dirent.h>

#include <algorithm>
#include <cstring>

#include "cli_test_support.hpp"

namespace mxq::clitest {
namespace {

std::vector<std::string> bad_files() {
  std::vector<std::string> files;
  if (DIR* dir = ::opendir(MXQ_CLI_BAD_FILES_DIR)) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") files.push_back(name);
    }
    ::closedir(dir);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(BadFiles, CorpusIsThere) { EXPECT_GE(bad_files().size(), 20u); }

TEST(BadFiles, ReaderRejectsEach) {
  for (const std::string& name : bad_files()) {
    const std::string path = std::string(MXQ_CLI_BAD_FILES_DIR) + "/" + name;
    EXPECT_THROW(st::SafetensorsFile file(path), st::SafetensorsError) << name;
  }
}

TEST(BadFiles, EveryCommandExitsThreeWithAMessage) {
  ScratchDir dir;
  for (const std::string& name : bad_files()) {
    const std::string path = std::string(MXQ_CLI_BAD_FILES_DIR) + "/" + name;
    for (const std::string& command :
         {"inspect " + path, "quantize " + path + " " + dir / "out.safetensors --format mxfp4",
          "dequantize " + path + " " + dir / "out.safetensors"}) {
      const RunResult r = run_mxq(command);
      EXPECT_EQ(r.exit_code, 3) << command << "\n" << r.output;
      EXPECT_NE(r.output.find("mxq: error: " + path), std::string::npos) << command << "\n" << r.output;
    }
    EXPECT_FALSE(file_exists(dir / "out.safetensors"));
  }
}

// Messages name the rule that was broken.
TEST(BadFiles, MessagesNameTheRule) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"header_longer_than_file", "larger than the file"},
      {"duplicate_name", "duplicate key 'a'"},
      {"unknown_dtype", "unknown dtype 'F7'"},
      {"shape_mismatch", "shape and dtype give 24 bytes but data_offsets span 16"},
      {"offsets_overlap", "overlaps"},
      {"offsets_gap", "gap before tensor 'b'"},
      {"offset_past_end", "past the data section"},
      {"invalid_json", "not valid JSON"},
      {"shape_overflow", "overflows"},
      {"deep_nesting", "nests deeper"},
      {"too_many_dims", "more than 64 elements"}};
  for (const auto& [file, message] : expected) {
    const RunResult r = run_mxq("inspect " + std::string(MXQ_CLI_BAD_FILES_DIR) + "/" + file + ".safetensors");
    EXPECT_NE(r.output.find(message), std::string::npos) << file << ": " << r.output;
  }
}

// A header image of `text` (no data section needed for the header rules).
std::vector<uint8_t> image_of(const std::string& text, size_t data_bytes = 0) {
  std::vector<uint8_t> image(8 + text.size() + data_bytes, 0);
  for (int i = 0; i < 8; ++i) image[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
  std::memcpy(image.data() + 8, text.data(), text.size());
  return image;
}

std::string parse_error(const std::vector<uint8_t>& image) {
  try {
    st::SafetensorsView::parse(image.data(), image.size(), "h");
  } catch (const st::SafetensorsError& e) {
    return e.what();
  }
  return "";
}

// Headers that would cost memory without bound are refused by their size limits, before a DOM is
// built; huge dimensions beside a zero neither overflow nor are refused.
TEST(BadFiles, HeaderLimits) {
  std::string dims = "1";
  for (int i = 0; i < 64; ++i) dims += ",1";
  EXPECT_NE(parse_error(image_of(R"({"a":{"dtype":"U8","shape":[)" + dims + R"(],"data_offsets":[0,1]}})", 1))
                .find("more than 64 elements"),
            std::string::npos);
  std::string many = "{";
  for (int i = 0; i <= (1 << 18); ++i)
    many += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  many += "}";
  EXPECT_NE(parse_error(image_of(many)).find("more than 262144 tensors in one file"), std::string::npos);
  const std::vector<uint8_t> zero =
      image_of(R"({"a":{"dtype":"BF16","shape":[4611686018427387904,4611686018427387904,0],"data_offsets":[0,0]}})");
  ASSERT_EQ(parse_error(zero), "");
  EXPECT_EQ(st::SafetensorsView::parse(zero.data(), zero.size(), "h").tensors()[0].elements(), 0);
}

// A file that is no safetensors file (a symlinked shard pointing at a private file, say): the
// message does not show its first bytes as a header length.
TEST(BadFiles, MessagesDoNotShowTheFilesBytes) {
  ScratchDir dir;
  write_text(dir / "secret.safetensors", "PRIVATEKEY-0123456789");
  uint64_t n = 0;
  std::memcpy(&n, "PRIVATEK", 8);
  const RunResult r = run_mxq("inspect " + dir / "secret.safetensors");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("not a safetensors file?"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(std::to_string(n)), std::string::npos) << r.output;
}

TEST(BadFiles, TruncatedImagesOfAGoodFileAreRejected) {
  ScratchDir dir;
  write_checkpoint(dir / "good.safetensors", {normal_tensor("w", "BF16", {4, 32}, 1)});
  FILE* f = std::fopen((dir / "good.safetensors").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::vector<uint8_t> image(1 << 16);
  image.resize(std::fread(image.data(), 1, image.size(), f));
  std::fclose(f);
  ASSERT_NO_THROW(st::SafetensorsView::parse(image.data(), image.size(), "good"));
  for (size_t n = 0; n < image.size(); ++n)
    EXPECT_THROW(st::SafetensorsView::parse(image.data(), n, "cut"), st::SafetensorsError) << n;
}

}  // namespace
}  // namespace mxq::clitest
