/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-scenario.h"

#include "ns3/string.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <google/protobuf/io/tokenizer.h>
#include <iostream>
#include <regex>
#include <sstream>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;
namespace gp = google::protobuf;

namespace
{

/**
 * Report bad input.
 * \param message what is wrong, with its location
 */
[[noreturn]] void
BadInput(const std::string& message)
{
    throw ScenarioError(message);
}

/// Keeps the first error of a text-format parse, with its location.
class FirstError : public gp::io::ErrorCollector
{
  public:
    /**
     * \param source the name of the parsed text (file name or option)
     * \param showLocation whether messages give the line and column
     */
    FirstError(std::string source, bool showLocation)
        : m_source(std::move(source)),
          m_showLocation(showLocation)
    {
    }

    void AddError(int line, gp::io::ColumnNumber column, const std::string& message) override
    {
        if (m_first.empty())
        {
            m_first = Format(line, column, message);
        }
    }

    void AddWarning(int line, gp::io::ColumnNumber column, const std::string& message) override
    {
        std::cerr << "metaroce-run: warning: " << Format(line, column, message) << std::endl;
    }

    /// \return the first error ("" if none).
    const std::string& First() const
    {
        return m_first;
    }

  private:
    /**
     * \param line 0-based line, -1 if unknown
     * \param column 0-based column
     * \param message the parser's message
     * \return "source:line:column: message"
     */
    std::string Format(int line, int column, const std::string& message) const
    {
        std::ostringstream os;
        os << m_source;
        if (line >= 0 && m_showLocation)
        {
            os << ":" << line + 1 << ":" << column + 1;
        }
        os << ": " << message;
        return os.str();
    }

    std::string m_source; //!< name of the text
    bool m_showLocation;  //!< give line and column
    std::string m_first;  //!< first error
};

/**
 * \param value a number
 * \return it with as few digits as iostream's default precision needs (4, 0.5)
 */

} // namespace

void
ScenarioLoader::Merge(const std::string& text, const std::string& label, bool isFile, bool verbatim)
{
    ScenarioSource src;
    src.label = label;
    src.isFile = isFile;
    src.tree = std::make_unique<gp::TextFormat::ParseInfoTree>();
    FirstError errors(label, verbatim);
    gp::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.WriteLocationsTo(src.tree.get());
    if (!parser.MergeFromString(text, &m_scenario))
    {
        BadInput(errors.First().empty() ? label + ": cannot parse" : errors.First());
    }
    m_sources.push_back(std::move(src));
}

std::string
ScenarioLoader::Where(const std::string& path) const
{
    // Each merged text appends to a repeated field, so element i of the scenario is
    // element i - (elements of the texts before) of the text that gave it.
    const size_t open = path.find('[');
    if (open != std::string::npos)
    {
        const std::string prefix = path.substr(0, open);
        const size_t close = path.find(']', open);
        const std::string suffix = close == std::string::npos ? "" : path.substr(close + 1);
        int index = std::atoi(path.c_str() + open + 1);
        for (const ScenarioSource& src : m_sources)
        {
            int line = -1;
            int column = -1;
            int count = 0;
            while (Locate(*src.tree, prefix + "[" + std::to_string(count) + "]", line, column))
            {
                ++count;
            }
            if (index < count)
            {
                if (!Locate(*src.tree,
                            prefix + "[" + std::to_string(index) + "]" + suffix,
                            line,
                            column))
                {
                    Locate(*src.tree, prefix + "[" + std::to_string(index) + "]", line, column);
                }
                return Describe(src, line, column);
            }
            index -= count;
        }
        return "scenario (default)";
    }
    for (auto it = m_sources.rbegin(); it != m_sources.rend(); ++it)
    {
        int line = -1;
        int column = -1;
        if (Locate(*it->tree, path, line, column))
        {
            return Describe(*it, line, column);
        }
    }
    return "scenario (default)";
}

void
ScenarioLoader::Invalid(const std::string& path, const std::string& what) const
{
    BadInput(Where(path) + ": " + path + ": " + what);
}

pb::Scenario&
ScenarioLoader::Get()
{
    return m_scenario;
}

const pb::Scenario&
ScenarioLoader::Get() const
{
    return m_scenario;
}

std::string
ScenarioLoader::Describe(const ScenarioSource& src, int line, int column)
{
    if (!src.isFile)
    {
        return src.label;
    }
    return src.label + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

bool
ScenarioLoader::Locate(const gp::TextFormat::ParseInfoTree& root,
                       const std::string& path,
                       int& line,
                       int& column)
{
    const gp::Descriptor* type = pb::Scenario::descriptor();
    const gp::TextFormat::ParseInfoTree* tree = &root;
    std::istringstream parts(path);
    std::string part;
    std::vector<std::string> names;
    while (std::getline(parts, part, '.'))
    {
        names.push_back(part);
    }
    for (size_t i = 0; i < names.size(); ++i)
    {
        std::string name = names[i];
        int index = -1;
        const size_t bracket = name.find('[');
        if (bracket != std::string::npos)
        {
            index = std::atoi(name.c_str() + bracket + 1);
            name = name.substr(0, bracket);
        }
        const gp::FieldDescriptor* field = type ? type->FindFieldByName(name) : nullptr;
        if (!field)
        {
            return false;
        }
        if (field->is_repeated() && index < 0)
        {
            index = 0;
        }
        if (i + 1 == names.size())
        {
            const auto loc = tree->GetLocation(field, index);
            line = loc.line;
            column = loc.column;
            return loc.line >= 0;
        }
        tree = tree->GetTreeForNested(field, index);
        if (!tree)
        {
            return false;
        }
        type = field->message_type();
    }
    return false;
}

NicSettings::NicSettings(const ScenarioLoader& loader, Ptr<MetaRoceNic> nic)
{
    const TypeId tid = MetaRoceNic::GetTypeId();
    // Defaults changed for the whole program: the fresh NIC's value against the TypeId's.
    for (std::size_t i = 0; i < tid.GetAttributeN(); ++i)
    {
        const TypeId::AttributeInformation info = tid.GetAttribute(i);
        if (!(info.flags & TypeId::ATTR_GET) || !(info.flags & TypeId::ATTR_CONSTRUCT))
        {
            continue;
        }
        Ptr<AttributeValue> now = info.checker->Create();
        nic->GetAttribute(info.name, *now);
        const std::string value = now->SerializeToString(info.checker);
        if (value == info.originalInitialValue->SerializeToString(info.checker))
        {
            continue;
        }
        // Config::SetDefault (which CommandLine's --ns3:: options call) moves the TypeId's
        // initial value; NS_ATTRIBUTE_DEFAULT only reaches the constructed object.
        const bool fromConfig = info.initialValue->SerializeToString(info.checker) == value;
        m_programDefaults[info.name] = {
            (fromConfig ? "--ns3::MetaRoceNic::" : "NS_ATTRIBUTE_DEFAULT ns3::MetaRoceNic::") +
                info.name + "=" + value,
            value};
        m_origins[info.name] = m_programDefaults[info.name].first;
    }
    const pb::Transport& tr = loader.Get().transport();
    for (int i = 0; i < tr.nic_attributes_size(); ++i)
    {
        const pb::Attribute& a = tr.nic_attributes(i);
        const std::string at = "transport.nic_attributes[" + std::to_string(i) + "]";
        const std::string why = CheckAttribute(tid, a);
        TypeId::AttributeInformation info;
        const bool known = tid.LookupAttributeByName(a.name(), &info);
        if (!why.empty())
        {
            loader.Invalid(at + (known ? ".value" : ".name"), why);
        }
        Ptr<AttributeValue> v = info.checker->Create();
        v->DeserializeFromString(a.value(), info.checker);
        const std::string value = v->SerializeToString(info.checker);
        const auto given = m_programDefaults.find(a.name());
        if (given != m_programDefaults.end() && given->second.second != value)
        {
            loader.Invalid(at + ".value",
                           a.name() + "=" + a.value() + " disagrees with " + given->second.first +
                               "; give the setting in one place (docs/scenarios.md, \"NIC "
                               "settings\")");
        }
        m_origins[a.name()] = loader.Where(at) + ": " + at + " " + a.name() + "=" + a.value();
        nic->SetAttribute(a.name(), StringValue(a.value()));
    }
}

std::string
NicSettings::Origin(const std::string& attribute) const
{
    const auto it = m_origins.find(attribute);
    return it == m_origins.end() ? "" : it->second;
}

void
NicSettings::Agree(const ScenarioLoader& loader,
                   const std::string& field,
                   const std::string& attribute,
                   const std::string& value,
                   bool agrees) const
{
    const std::string origin = Origin(attribute);
    if (!agrees && !origin.empty())
    {
        loader.Invalid(field,
                       value + " disagrees with " + origin +
                           "; give the setting in one place (docs/scenarios.md, "
                           "\"NIC settings\")");
    }
}

std::string
SetToTextFormat(const std::string& arg)
{
    static const std::regex pathForm("^([A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*)=(.*)$",
                                     std::regex::extended);
    std::smatch m;
    if (!std::regex_match(arg, m, pathForm))
    {
        return arg;
    }
    std::vector<std::string> names;
    std::istringstream parts(m[1].str());
    std::string part;
    while (std::getline(parts, part, '.'))
    {
        names.push_back(part);
    }
    std::string value = m[3].str();
    const gp::Descriptor* type = pb::Scenario::descriptor();
    std::string open;
    std::string close;
    for (size_t i = 0; i < names.size(); ++i)
    {
        const gp::FieldDescriptor* field = type ? type->FindFieldByName(names[i]) : nullptr;
        if (!field)
        {
            BadInput("--set '" + arg + "': no field '" + names[i] + "' in " +
                     (type ? type->full_name() : std::string("a scalar")));
        }
        if (i + 1 < names.size())
        {
            if (field->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE)
            {
                BadInput("--set '" + arg + "': '" + names[i] + "' is not a message");
            }
            open += names[i] + " { ";
            close = " }" + close;
            type = field->message_type();
        }
        else
        {
            if (field->cpp_type() == gp::FieldDescriptor::CPPTYPE_STRING &&
                (value.empty() || value.front() != '"'))
            {
                std::string quoted = "\"";
                for (char c : value)
                {
                    if (c == '"' || c == '\\')
                    {
                        quoted += '\\';
                    }
                    quoted += c;
                }
                value = quoted + "\"";
            }
            open += names[i] + ": " + value;
        }
    }
    return open + close;
}

std::vector<std::string>
EnumChoices(const TypeId::AttributeInformation& info)
{
    std::vector<std::string> names;
    if (info.checker->GetValueTypeName().rfind("ns3::EnumValue", 0) != 0 ||
        !info.checker->HasUnderlyingTypeInformation())
    {
        return names;
    }
    std::istringstream in(info.checker->GetUnderlyingTypeInformation());
    for (std::string name; std::getline(in, name, '|');)
    {
        names.push_back(name);
    }
    return names;
}

std::string
CheckAttribute(TypeId tid, const pb::Attribute& a)
{
    TypeId::AttributeInformation info;
    if (!tid.LookupAttributeByName(a.name(), &info))
    {
        return "no attribute '" + a.name() + "' in " + tid.GetName();
    }
    if (!(info.flags & TypeId::ATTR_CONSTRUCT))
    {
        return "attribute '" + a.name() + "' cannot be set";
    }
    const std::vector<std::string> choices = EnumChoices(info);
    if (!choices.empty() && std::find(choices.begin(), choices.end(), a.value()) == choices.end())
    {
        std::string expected;
        for (size_t i = 0; i < choices.size(); ++i)
        {
            expected += (i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", ")) + choices[i];
        }
        return "bad value '" + a.value() + "' for " + a.name() + ": expected " + expected;
    }
    // ns-3 aborts on an unparsable Time: check the form first.
    if (info.checker->GetValueTypeName() == "ns3::TimeValue")
    {
        static const std::regex timeForm(
            "^[+-]?[0-9]*\\.?[0-9]+([eE][+-]?[0-9]+)?(s|ms|us|ns|ps|fs|min|h|d|y)?$");
        if (!std::regex_match(a.value(), timeForm))
        {
            return "bad time '" + a.value() + "' for " + a.name() + " (e.g. \"50us\")";
        }
    }
    Ptr<AttributeValue> v = info.checker->Create();
    if (!v->DeserializeFromString(a.value(), info.checker) || !info.checker->Check(*v))
    {
        return "bad value '" + a.value() + "' for " + a.name() + " (" +
               info.checker->GetUnderlyingTypeInformation() + ")";
    }
    return "";
}

void
CheckAttributeOption(const std::string& arg)
{
    const size_t dashes = arg.rfind("--", 0) == 0 ? 2 : (arg.rfind('-', 0) == 0 ? 1 : 0);
    const size_t equals = arg.find('=');
    if (dashes == 0 || equals == std::string::npos)
    {
        return;
    }
    const std::string name = arg.substr(dashes, equals - dashes);
    const size_t colons = name.rfind("::");
    if (colons == std::string::npos)
    {
        return;
    }
    TypeId tid;
    if (!TypeId::LookupByNameFailSafe(name.substr(0, colons), &tid))
    {
        BadInput(arg + ": no type " + name.substr(0, colons) +
                 " (attribute defaults are --ns3::Type::Attribute=value)");
    }
    pb::Attribute a;
    a.set_name(name.substr(colons + 2));
    a.set_value(arg.substr(equals + 1));
    const std::string why = CheckAttribute(tid, a);
    if (!why.empty())
    {
        BadInput(arg + ": " + why);
    }
}

Time
FromUs(double us)
{
    return NanoSeconds(static_cast<int64_t>(std::llround(us * 1e3)));
}

double
ToUs(Time t)
{
    return t.GetSeconds() * 1e6;
}

std::string
Fixed(double value, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
    return buf;
}

} // namespace metaroce_run
