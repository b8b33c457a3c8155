/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The HIL tools' option layer (metaroce-hil-options.h): spellings, values, aliases, help and
// the usage errors, without running a tool.

#include "metaroce-hil-options.h"

#include <gtest/gtest.h>
#include <sstream>

namespace
{

using metaroce::hil::ToolOptions;

/// A command line with one option of each kind.
struct Fixture
{
    uint64_t size{4096};
    uint32_t count{1};
    std::string mode{"rc"};
    std::string server;
    bool noIcrc{false};
    double loss{0};
    ToolOptions options{"metaroce-test", "usage: metaroce-test [options]"};

    Fixture()
    {
        options.Add("size", "BYTES", "message size (4K)", metaroce::hil::Size(size, 1, 1 << 30));
        options.Add("count", "N", "messages (1)", metaroce::hil::Number(count, 1, 1000));
        options.Add("mode", "MODE", "rc or ud", metaroce::hil::Choice(mode, {"rc", "ud"}));
        options.Add("server", "ADDR", "server address", metaroce::hil::Ipv4(server));
        options.Add("loss", "P", "loss probability", metaroce::hil::Real(loss, 0, 1));
        options.AddFlag("no-icrc", noIcrc, "no ICRC");
        options.Alias("messageSize", "size");
        options.AllowPositional(1);
    }

    bool Parse(const std::vector<std::string>& args, std::string& error)
    {
        return options.TryParse(args, error);
    }
};

TEST(HilOptions, ValuesAsNextWordOrAfterEquals)
{
    Fixture f;
    std::string error;
    ASSERT_TRUE(f.Parse({"--size", "64K", "--count=7", "--mode", "ud", "--server=10.0.0.2"}, error))
        << error;
    EXPECT_EQ(f.size, 64u * 1024);
    EXPECT_EQ(f.count, 7u);
    EXPECT_EQ(f.mode, "ud");
    EXPECT_EQ(f.server, "10.0.0.2");
    EXPECT_TRUE(f.options.Given("size"));
    EXPECT_FALSE(f.options.Given("loss"));
}

TEST(HilOptions, FlagsAloneOrWithValue)
{
    Fixture f;
    std::string error;
    ASSERT_TRUE(f.Parse({"--no-icrc"}, error)) << error;
    EXPECT_TRUE(f.noIcrc);
    ASSERT_TRUE(f.Parse({"--no-icrc", "--no-icrc=off"}, error)) << error;
    EXPECT_FALSE(f.noIcrc);
    EXPECT_FALSE(f.Parse({"--no-icrc=maybe"}, error));
    EXPECT_NE(error.find("--no-icrc"), std::string::npos) << error;
}

TEST(HilOptions, LastOccurrenceWins)
{
    Fixture f;
    std::string error;
    ASSERT_TRUE(f.Parse({"--count", "3", "--count", "9"}, error)) << error;
    EXPECT_EQ(f.count, 9u);
}

TEST(HilOptions, AliasesWorkAndAreListedAsDeprecated)
{
    Fixture f;
    std::string error;
    ASSERT_TRUE(f.Parse({"--messageSize=1M"}, error)) << error;
    EXPECT_EQ(f.size, 1u << 20);
    EXPECT_TRUE(f.options.Given("size"));
    const std::string help = f.options.Help();
    const size_t deprecated = help.find("Deprecated spellings");
    ASSERT_NE(deprecated, std::string::npos) << help;
    EXPECT_NE(help.find("--messageSize", deprecated), std::string::npos) << help;
    EXPECT_NE(help.find("same as --size"), std::string::npos) << help;
    EXPECT_LT(help.find("--size BYTES"), deprecated) << help;
    // An error names the spelling that was used.
    EXPECT_FALSE(f.Parse({"--messageSize", "x"}, error));
    EXPECT_NE(error.find("--messageSize"), std::string::npos) << error;
}

TEST(HilOptions, PositiveAndMatchingValues)
{
    double rate = 1;
    std::string mac;
    ToolOptions options{"metaroce-test", "usage: metaroce-test"};
    options.Add("rate", "R", "rate", metaroce::hil::Positive(rate, 10));
    options.Add("mac",
                "MAC",
                "a MAC",
                metaroce::hil::Matching(
                    mac,
                    [](const std::string& text) { return text.size() == 17; },
                    "a MAC address"));
    std::string error;
    ASSERT_TRUE(options.TryParse({"--rate", "2.5", "--mac", "02:00:00:00:00:01"}, error)) << error;
    EXPECT_EQ(rate, 2.5);
    EXPECT_EQ(mac, "02:00:00:00:00:01");
    for (const char* bad : {"0", "-1", "11", "x"})
    {
        EXPECT_FALSE(options.TryParse({"--rate", bad}, error)) << bad;
        EXPECT_NE(error.find("a number > 0 and <= 10"), std::string::npos) << error;
    }
    EXPECT_FALSE(options.TryParse({"--mac", "02:00"}, error));
    EXPECT_NE(error.find("expected a MAC address"), std::string::npos) << error;
}

TEST(HilOptions, HelpWrapsLongDescriptions)
{
    ToolOptions options{"metaroce-test", "usage: metaroce-test"};
    std::string text;
    options.Add("text",
                "T",
                std::string(30, 'a') + " " + std::string(40, 'b') + " " + std::string(40, 'c'),
                metaroce::hil::Text(text));
    std::istringstream help(options.Help());
    std::string line;
    while (std::getline(help, line))
    {
        EXPECT_LE(line.size(), 100u) << line;
    }
    EXPECT_NE(options.Help().find("\n" + std::string(14, ' ') + std::string(40, 'c')),
              std::string::npos)
        << options.Help();
}

TEST(HilOptions, HelpIsReported)
{
    Fixture f;
    std::string error;
    EXPECT_FALSE(f.Parse({"--count", "2", "-h"}, error));
    EXPECT_EQ(error, "help");
    EXPECT_EQ(f.options.Parse({"--help"}), 0);
}

TEST(HilOptions, ErrorsSayWhatWasExpected)
{
    Fixture f;
    std::string error;
    EXPECT_FALSE(f.Parse({"--bogus"}, error));
    EXPECT_NE(error.find("bogus"), std::string::npos) << error;
    EXPECT_FALSE(f.Parse({"--count"}, error));
    EXPECT_NE(error.find("count"), std::string::npos) << error;
    EXPECT_FALSE(f.Parse({"--count", "0"}, error));
    EXPECT_NE(error.find("an integer in 1..1000"), std::string::npos) << error;
    EXPECT_FALSE(f.Parse({"--count=12x"}, error));
    EXPECT_FALSE(f.Parse({"--size", "2G"}, error));
    EXPECT_FALSE(f.Parse({"--mode", "xx"}, error));
    EXPECT_NE(error.find("one of rc|ud"), std::string::npos) << error;
    EXPECT_FALSE(f.Parse({"--server", "10.0.0"}, error));
    EXPECT_FALSE(f.Parse({"--server", "10.0.0.256"}, error));
    EXPECT_FALSE(f.Parse({"--loss", "1.5"}, error));
    EXPECT_FALSE(f.Parse({"--loss", "nan"}, error));
    // No abbreviations: "--cou" is not "--count".
    EXPECT_FALSE(f.Parse({"--cou", "3"}, error));
    EXPECT_EQ(f.options.Parse({"--count", "0"}), metaroce::hil::EXIT_USAGE);
}

TEST(HilOptions, PositionalArgumentsAreCounted)
{
    Fixture f;
    std::string error;
    ASSERT_TRUE(f.Parse({"10.0.0.1", "--count", "2"}, error)) << error;
    ASSERT_EQ(f.options.Positional().size(), 1u);
    EXPECT_EQ(f.options.Positional()[0], "10.0.0.1");
    EXPECT_FALSE(f.Parse({"a", "b"}, error));
    EXPECT_NE(error.find("'b'"), std::string::npos) << error;
}

} // namespace
