/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-options.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

namespace metaroce
{
namespace hil
{

namespace po = boost::program_options;

namespace
{

/// \return true and \p value if \p text is a whole unsigned decimal number.
bool
ParseUnsigned(const std::string& text, uint64_t& value)
{
    if (text.empty() || text[0] < '0' || text[0] > '9')
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0')
    {
        return false;
    }
    value = v;
    return true;
}

/// \return "an integer in LO..HI".
std::string
RangeText(const char* what, uint64_t lo, uint64_t hi)
{
    std::ostringstream s;
    s << what << " in " << lo << ".." << hi;
    return s.str();
}

template <typename T>
ValueParser
UnsignedParser(T& target, T lo, T hi)
{
    return [&target, lo, hi](const std::string& text) -> std::string {
        uint64_t v = 0;
        if (!ParseUnsigned(text, v) || v < lo || v > hi)
        {
            return RangeText("an integer", lo, hi);
        }
        target = static_cast<T>(v);
        return "";
    };
}

} // namespace

ValueParser
Number(uint64_t& target, uint64_t lo, uint64_t hi)
{
    return UnsignedParser<uint64_t>(target, lo, hi);
}

ValueParser
Number(uint32_t& target, uint32_t lo, uint32_t hi)
{
    return UnsignedParser<uint32_t>(target, lo, hi);
}

ValueParser
Number(uint16_t& target, uint16_t lo, uint16_t hi)
{
    return UnsignedParser<uint16_t>(target, lo, hi);
}

ValueParser
Number(int& target, int lo, int hi)
{
    return [&target, lo, hi](const std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        long v = std::strtol(text.c_str(), &end, 10);
        if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi)
        {
            std::ostringstream s;
            s << "an integer in " << lo << ".." << hi;
            return s.str();
        }
        target = static_cast<int>(v);
        return "";
    };
}

ValueParser
Real(double& target, double lo, double hi)
{
    return [&target, lo, hi](const std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (text.empty() || errno != 0 || *end != '\0' || !(v >= lo && v <= hi))
        {
            std::ostringstream s;
            if (hi == UNBOUNDED)
            {
                s << "a number >= " << lo;
            }
            else
            {
                s << "a number in " << lo << ".." << hi;
            }
            return s.str();
        }
        target = v;
        return "";
    };
}

ValueParser
Positive(double& target, double hi)
{
    return [&target, hi](const std::string& text) -> std::string {
        double v = 0;
        if (!Real(v, 0, hi)(text).empty() || v == 0)
        {
            std::ostringstream s;
            s << "a number > 0";
            if (hi != UNBOUNDED)
            {
                s << " and <= " << hi;
            }
            return s.str();
        }
        target = v;
        return "";
    };
}

ValueParser
Size(uint64_t& target, uint64_t lo, uint64_t hi)
{
    return [&target, lo, hi](const std::string& text) -> std::string {
        const std::string expected = RangeText("a size (K/M/G suffix allowed)", lo, hi);
        std::string digits = text;
        uint64_t unit = 1;
        if (!digits.empty())
        {
            switch (digits.back())
            {
            case 'K':
            case 'k':
                unit = 1ULL << 10;
                break;
            case 'M':
            case 'm':
                unit = 1ULL << 20;
                break;
            case 'G':
            case 'g':
                unit = 1ULL << 30;
                break;
            default:
                break;
            }
            if (unit != 1)
            {
                digits.pop_back();
            }
        }
        uint64_t v = 0;
        if (!ParseUnsigned(digits, v) || v > std::numeric_limits<uint64_t>::max() / unit)
        {
            return expected;
        }
        v *= unit;
        if (v < lo || v > hi)
        {
            return expected;
        }
        target = v;
        return "";
    };
}

ValueParser
Choice(std::string& target, const std::vector<std::string>& choices)
{
    return [&target, choices](const std::string& text) -> std::string {
        for (const auto& choice : choices)
        {
            if (text == choice)
            {
                target = text;
                return "";
            }
        }
        std::string expected = "one of";
        for (size_t i = 0; i < choices.size(); ++i)
        {
            expected += (i == 0 ? " " : "|") + choices[i];
        }
        return expected;
    };
}

ValueParser
Text(std::string& target)
{
    return [&target](const std::string& text) -> std::string {
        if (text.empty())
        {
            return "a non-empty text";
        }
        target = text;
        return "";
    };
}

ValueParser
OnOff(bool& target)
{
    return [&target](const std::string& text) -> std::string {
        if (text == "on" || text == "true" || text == "1" || text == "yes")
        {
            target = true;
            return "";
        }
        if (text == "off" || text == "false" || text == "0" || text == "no")
        {
            target = false;
            return "";
        }
        return "on|off (or true|false, 1|0, yes|no)";
    };
}

ValueParser
Ipv4(std::string& target)
{
    return [&target](const std::string& text) -> std::string {
        const std::string expected = "a dotted IPv4 address";
        std::istringstream in(text);
        std::string part;
        int parts = 0;
        while (std::getline(in, part, '.'))
        {
            uint64_t v = 0;
            if (part.size() > 3 || !ParseUnsigned(part, v) || v > 255)
            {
                return expected;
            }
            ++parts;
        }
        if (parts != 4 || text.back() == '.')
        {
            return expected;
        }
        target = text;
        return "";
    };
}

ValueParser
Matching(std::string& target,
         std::function<bool(const std::string&)> isValid,
         const std::string& expected)
{
    return [&target, isValid, expected](const std::string& text) -> std::string {
        if (!isValid(text))
        {
            return expected;
        }
        target = text;
        return "";
    };
}

/// One option of the command line.
struct OptionEntry
{
    std::string name;      //!< long name
    std::string valueName; //!< "" for a flag
    std::string help;      //!< help text
    ValueParser parser;    //!< stores the value
};

struct ToolOptions::Impl
{
    std::string program;                                                    //!< for messages
    std::string synopsis;                                                   //!< help text head
    std::string epilog;                                                     //!< help text tail
    std::vector<std::pair<std::string, std::vector<std::string>>> sections; //!< help layout
    std::map<std::string, OptionEntry> options;                             //!< by long name
    std::map<std::string, std::string> aliases; //!< old spelling -> name
    size_t positionalMost{0};                   //!< positional arguments allowed
    std::vector<std::string> positional;        //!< after Parse()
    std::set<std::string> given;                //!< option names given
};

ToolOptions::ToolOptions(std::string program, std::string synopsis)
    : m_impl(std::make_unique<Impl>())
{
    m_impl->program = std::move(program);
    m_impl->synopsis = std::move(synopsis);
    m_impl->sections.push_back({"Options", {}});
}

ToolOptions::~ToolOptions() = default;

void
ToolOptions::Section(const std::string& title)
{
    m_impl->sections.push_back({title, {}});
}

void
ToolOptions::Add(const std::string& name,
                 const std::string& valueName,
                 const std::string& help,
                 ValueParser parser)
{
    m_impl->options[name] = OptionEntry{name, valueName, help, std::move(parser)};
    m_impl->sections.back().second.push_back(name);
}

void
ToolOptions::AddFlag(const std::string& name, bool& target, const std::string& help)
{
    m_impl->options[name] = OptionEntry{name, "", help, OnOff(target)};
    m_impl->sections.back().second.push_back(name);
}

void
ToolOptions::Alias(const std::string& oldSpelling, const std::string& name)
{
    m_impl->aliases[oldSpelling] = name;
}

void
ToolOptions::Epilog(const std::string& text)
{
    m_impl->epilog = text;
}

void
ToolOptions::AllowPositional(size_t most)
{
    m_impl->positionalMost = most;
}

bool
ToolOptions::TryParse(const std::vector<std::string>& args, std::string& error)
{
    error.clear();
    m_impl->positional.clear();
    m_impl->given.clear();
    po::options_description desc;
    desc.add_options()("help,h", "help");
    auto addOne = [&desc](const std::string& spelling, const OptionEntry& entry) {
        if (entry.valueName.empty())
        {
            desc.add_options()(spelling.c_str(), po::value<std::string>()->implicit_value("on"));
        }
        else
        {
            desc.add_options()(spelling.c_str(), po::value<std::string>());
        }
    };
    for (const auto& [name, entry] : m_impl->options)
    {
        addOne(name, entry);
    }
    for (const auto& [oldSpelling, name] : m_impl->aliases)
    {
        auto it = m_impl->options.find(name);
        if (it != m_impl->options.end())
        {
            addOne(oldSpelling, it->second);
        }
    }
    desc.add_options()("metaroce-positional", po::value<std::vector<std::string>>());
    po::positional_options_description positional;
    positional.add("metaroce-positional", -1);
    const int style =
        po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::parsed_options parsed(&desc);
    try
    {
        parsed =
            po::command_line_parser(args).options(desc).positional(positional).style(style).run();
    }
    catch (const po::error& e)
    {
        error = e.what();
        return false;
    }
    for (const auto& option : parsed.options)
    {
        if (option.string_key == "help")
        {
            error = "help";
            return false;
        }
        if (option.string_key == "metaroce-positional")
        {
            m_impl->positional.insert(m_impl->positional.end(),
                                      option.value.begin(),
                                      option.value.end());
            continue;
        }
        std::string name = option.string_key;
        auto alias = m_impl->aliases.find(name);
        if (alias != m_impl->aliases.end())
        {
            name = alias->second;
        }
        const OptionEntry& entry = m_impl->options.at(name);
        const std::string text = option.value.empty() ? "on" : option.value.back();
        const std::string expected = entry.parser(text);
        if (!expected.empty())
        {
            error =
                "bad value '" + text + "' for --" + option.string_key + ": expected " + expected;
            return false;
        }
        m_impl->given.insert(name);
    }
    if (m_impl->positional.size() > m_impl->positionalMost)
    {
        error = "unexpected argument '" + m_impl->positional[m_impl->positionalMost] + "'";
        return false;
    }
    return true;
}

int
ToolOptions::Parse(const std::vector<std::string>& args)
{
    std::string error;
    if (TryParse(args, error))
    {
        return -1;
    }
    if (error == "help")
    {
        std::cout << Help();
        return 0;
    }
    return UsageError(error);
}

int
ToolOptions::Parse(int argc, char** argv)
{
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i)
    {
        args.emplace_back(argv[i]);
    }
    return Parse(args);
}

bool
ToolOptions::Given(const std::string& name) const
{
    return m_impl->given.count(name) != 0;
}

const std::vector<std::string>&
ToolOptions::Positional() const
{
    return m_impl->positional;
}

std::string
ToolOptions::Help() const
{
    auto left = [this](const std::string& name) {
        const OptionEntry& entry = m_impl->options.at(name);
        return "--" + name + (entry.valueName.empty() ? "" : " " + entry.valueName);
    };
    const std::string helpLeft = "-h, --help";
    size_t width = helpLeft.size();
    for (const auto& section : m_impl->sections)
    {
        for (const auto& name : section.second)
        {
            width = std::max(width, left(name).size());
        }
    }
    for (const auto& alias : m_impl->aliases)
    {
        width = std::max(width, alias.first.size() + 2);
    }
    std::ostringstream out;
    // The description starts at column `indent` and wraps at 100 columns.
    const size_t indent = width + 4;
    const size_t room = indent + 30 < 100 ? 100 - indent : 30;
    auto line = [&out, width, indent, room](const std::string& l, const std::string& help) {
        out << "  " << l << std::string(width - l.size() + 2, ' ');
        size_t column = 0;
        std::istringstream words(help);
        std::string word;
        while (words >> word)
        {
            if (column > 0 && column + 1 + word.size() > room)
            {
                out << "\n" << std::string(indent, ' ');
                column = 0;
            }
            else if (column > 0)
            {
                out << ' ';
                ++column;
            }
            out << word;
            column += word.size();
        }
        out << "\n";
    };
    out << m_impl->synopsis << "\n";
    for (size_t i = 0; i < m_impl->sections.size(); ++i)
    {
        const auto& [title, names] = m_impl->sections[i];
        if (names.empty() && i != 0)
        {
            continue;
        }
        out << "\n" << title << ":\n";
        if (i == 0)
        {
            line(helpLeft, "print this help and exit");
        }
        for (const auto& name : names)
        {
            line(left(name), m_impl->options.at(name).help);
        }
    }
    if (!m_impl->aliases.empty())
    {
        out << "\nDeprecated spellings (still accepted):\n";
        for (const auto& [oldSpelling, name] : m_impl->aliases)
        {
            line("--" + oldSpelling, "same as --" + name);
        }
    }
    if (!m_impl->epilog.empty())
    {
        out << "\n" << m_impl->epilog << "\n";
    }
    return out.str();
}

int
ToolOptions::UsageError(const std::string& why) const
{
    std::cerr << m_impl->program << ": " << why << " (see --help)\n";
    return EXIT_USAGE;
}

} // namespace hil
} // namespace metaroce
