/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_OPTIONS_H
#define METAROCE_HIL_OPTIONS_H

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * The command line of every HIL tool (metaroce-perf, metaroce-hild, metaroce-udp-blast,
 * metaroce-hil-fabric, metaroce-hil-forwarder): one option layer over Boost.Program_options,
 * so that all of them read options the same way (docs/hil.md, "Command lines"):
 *  - long options in kebab-case, the value either as the next word or after '=':
 *    `--size 64K` or `--size=64K`; no abbreviations;
 *  - flags alone (`--no-icrc`), or with a value on|off|true|false|1|0|yes|no after '=';
 *  - `-h` / `--help` prints the help text to stdout and exits 0;
 *  - an option given twice: the last one counts (scripts append overrides);
 *  - an unknown option, a missing value, a bad value or a bad combination prints
 *    "PROGRAM: WHY (see --help)" to stderr and exits with EXIT_USAGE (64, sysexits' EX_USAGE;
 *    the tools' other statuses, such as metaroce-perf's 2 "client interrupted", stay theirs);
 *  - old spellings of renamed options (metaroce-hil-fabric's camelCase, ns-3 style) are
 *    deprecated aliases that keep working; the help text lists them after the options.
 *
 * Values are applied in command-line order by the option's ValueParser, a function that
 * stores the value and returns "" or what was expected; the helpers below (Number, Real,
 * Positive, Size, Choice, Text, OnOff, Ipv4, Matching) build the usual ones. The help text
 * wraps each option's description at 100 columns.
 */

namespace metaroce
{
namespace hil
{

/// Exit status of a usage error (EX_USAGE of sysexits.h), for every HIL tool.
constexpr int EXIT_USAGE = 64;

/// No upper bound, for Real() and Positive().
constexpr double UNBOUNDED = std::numeric_limits<double>::infinity();

/**
 * Store an option's text into its setting.
 * \return "" if the text is valid, else what was expected ("an integer in 1..64")
 */
using ValueParser = std::function<std::string(const std::string& text)>;

/// \return a parser of an unsigned integer in [\p lo, \p hi] into \p target.
ValueParser Number(uint64_t& target, uint64_t lo = 0, uint64_t hi = UINT64_MAX);
/// \copydoc Number(uint64_t&,uint64_t,uint64_t)
ValueParser Number(uint32_t& target, uint32_t lo = 0, uint32_t hi = UINT32_MAX);
/// \copydoc Number(uint64_t&,uint64_t,uint64_t)
ValueParser Number(uint16_t& target, uint16_t lo = 0, uint16_t hi = UINT16_MAX);
/// \return a parser of an integer in [\p lo, \p hi] into \p target.
ValueParser Number(int& target, int lo, int hi);
/// \return a parser of a real number in [\p lo, \p hi] into \p target.
ValueParser Real(double& target, double lo, double hi);
/// \return a parser of a real number above 0 and at most \p hi into \p target.
ValueParser Positive(double& target, double hi = UNBOUNDED);
/// \return a parser of a size with an optional K/M/G suffix (powers of 1024) in [lo, hi].
ValueParser Size(uint64_t& target, uint64_t lo, uint64_t hi);
/// \return a parser that accepts only one of \p choices.
ValueParser Choice(std::string& target, const std::vector<std::string>& choices);
/// \return a parser that accepts any non-empty text.
ValueParser Text(std::string& target);
/// \return a parser of on|off (and true|false, 1|0, yes|no).
ValueParser OnOff(bool& target);
/// \return a parser of a dotted IPv4 address (kept as text).
ValueParser Ipv4(std::string& target);
/**
 * \return a parser that keeps the text in \p target when \p isValid accepts it
 * \param expected what the text should be, for the error message ("a MAC address")
 */
ValueParser Matching(std::string& target,
                     std::function<bool(const std::string&)> isValid,
                     const std::string& expected);

/// A HIL tool's command line (see the file comment).
class ToolOptions
{
  public:
    /**
     * \param program the program name, for messages
     * \param synopsis the first lines of the help text (usage and what the program does)
     */
    ToolOptions(std::string program, std::string synopsis);
    ~ToolOptions();
    ToolOptions(const ToolOptions&) = delete;
    ToolOptions& operator=(const ToolOptions&) = delete;

    /// Start a section of the help text: the options added next are listed under \p title.
    void Section(const std::string& title);

    /**
     * Add an option that takes a value.
     * \param name the long name, without "--"
     * \param valueName what the value is, in the help text ("BYTES")
     * \param help the help text (with the default)
     * \param parser stores the value
     */
    void Add(const std::string& name,
             const std::string& valueName,
             const std::string& help,
             ValueParser parser);

    /// Add a flag: `--name` sets \p target, `--name=off` clears it.
    void AddFlag(const std::string& name, bool& target, const std::string& help);

    /// Accept \p oldSpelling (without "--") as a deprecated spelling of option \p name.
    void Alias(const std::string& oldSpelling, const std::string& name);

    /// Text printed after the options in the help text.
    void Epilog(const std::string& text);

    /// Words that are not options are positional arguments, at most \p most of them.
    void AllowPositional(size_t most);

    /**
     * Parse the arguments (without the program name), applying each value in order.
     * \param args the arguments
     * \return -1 to run the program, else the exit status after the help text (0) or a usage
     *         error (EXIT_USAGE), both already printed
     */
    int Parse(const std::vector<std::string>& args);

    /// \copydoc Parse(const std::vector<std::string>&)
    int Parse(int argc, char** argv);

    /// \return true if option \p name was given (after Parse()).
    bool Given(const std::string& name) const;

    /// \return the positional arguments (after Parse()).
    const std::vector<std::string>& Positional() const;

    /// \return the help text.
    std::string Help() const;

    /// Print "PROGRAM: WHY (see --help)" to stderr. \return EXIT_USAGE
    int UsageError(const std::string& why) const;

    /**
     * Parse without printing.
     * \param args the arguments
     * \param[out] error the usage error ("" if none)
     * \return false on a usage error or --help (then \p error is "help")
     */
    bool TryParse(const std::vector<std::string>& args, std::string& error);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl; //!< Boost.Program_options state
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_OPTIONS_H
