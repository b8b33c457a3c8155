/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-scenario.h"

#include "ns3/metaroce-partition.h"
#include "ns3/metaroce-policy-names.h"
#include "ns3/metaroce-switch.h"
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
std::string
Shortest(double value)
{
    std::ostringstream os;
    os << value;
    return os.str();
}

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

void
WarnIfStopBeforeTimeout(const pb::Scenario& sc,
                        const NicSettings& nic,
                        const metaroce::ConnectionConfig& cfg)
{
    if (sc.transport().name() != "rocev2" || MetaRoceGetRank() != 0)
    {
        return;
    }
    const bool irn = sc.transport().rocev2_recovery() == "irn";
    const std::string attribute = irn ? "RoceIrnRtoLow" : "RoceLocalAckTimeout";
    double timeoutMs;
    std::string timer;
    if (irn)
    {
        timeoutMs = cfg.rocev2.irnRtoLow / 1e9; // engine times are picoseconds
        timer = "the IRN retransmission timeout RoceIrnRtoLow";
    }
    else
    {
        const uint8_t n = cfg.rocev2.localAckTimeout;
        if (n == 0)
        {
            return; // no timer at all
        }
        timeoutMs = 4.096e-3 * std::ldexp(1.0, std::min<int>(n, 31));
        timer = "the RoCEv2 local ACK timeout (RoceLocalAckTimeout " + std::to_string(n) +
                ": 4.096 us * 2^" + std::to_string(n) + ")";
    }
    if (sc.stop_time_ms() < timeoutMs)
    {
        const std::string origin = nic.Origin(attribute);
        std::cerr << "metaroce-run: warning: stop_time_ms " << sc.stop_time_ms()
                  << " is shorter than " << timer << " = " << Fixed(timeoutMs, 3)
                  << " ms: a lost packet that needs a timeout is never retransmitted before the "
                     "run stops"
                  << (origin.empty() ? " (built-in default; set " + attribute +
                                           " with transport.nic_attributes)"
                                     : " (" + origin + ")")
                  << std::endl;
    }
}

uint32_t
HostCount(const pb::Topology& t)
{
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        return t.tiers() == 2 ? t.k() * t.k() / 2 : t.k() * t.k() * t.k() / 4;
    case pb::Topology::SINGLE_SWITCH:
        return t.hosts();
    default:
        return t.leaves() * t.hosts_per_leaf();
    }
}

void
Complete(ScenarioLoader& loader, const NicSettings& nic, metaroce::ConnectionConfig& cfg)
{
    pb::Scenario& s = loader.Get();
    if (s.seed() == 0)
    {
        s.set_seed(1);
    }
    if (s.stop_time_ms() == 0)
    {
        s.set_stop_time_ms(1000);
    }
    if (!(s.stop_time_ms() > 0))
    {
        loader.Invalid("stop_time_ms", "must be positive");
    }
    if (s.event_order().empty())
    {
        s.set_event_order("insertion");
    }
    if (s.event_order() != "insertion" && s.event_order() != "link")
    {
        loader.Invalid("event_order", "'" + s.event_order() + "': expected insertion or link");
    }

    // Transport first: the PFC default depends on it. A value taken from a NIC attribute is
    // reported where that attribute was given.
    pb::Transport& tr = *s.mutable_transport();
    auto invalid = [&](const std::string& field,
                       const std::string& attribute,
                       bool fromNic,
                       const std::string& what) {
        if (fromNic)
        {
            BadInput(nic.Origin(attribute) + ": " + what);
        }
        loader.Invalid(field, what);
    };
    const bool nameFromNic = tr.name().empty();
    if (nameFromNic)
    {
        tr.set_name(cfg.transport);
    }
    nic.Agree(loader, "transport.name", "Transport", tr.name(), tr.name() == cfg.transport);
    if (!metaroce::IsPolicyName(metaroce::PolicyKind::TRANSPORT, tr.name()))
    {
        invalid("transport.name",
                "Transport",
                nameFromNic,
                "'" + tr.name() + "': expected " +
                    metaroce::PolicyChoices(metaroce::PolicyKind::TRANSPORT));
    }
    const bool roce = tr.name() == "rocev2";
    cfg.transport = tr.name();
    if (tr.paths() == 0)
    {
        tr.set_paths(cfg.numPaths);
    }
    if (tr.paths() > 64)
    {
        loader.Invalid("transport.paths", "at most 64");
    }
    if (roce)
    {
        tr.set_paths(1); // a RoCEv2 QP has one path: the setting is for metaroce only
    }
    else
    {
        nic.Agree(loader,
                  "transport.paths",
                  "NumPaths",
                  std::to_string(tr.paths()),
                  tr.paths() == cfg.numPaths);
    }
    cfg.numPaths = tr.paths();
    if (tr.mtu() == 0)
    {
        tr.set_mtu(cfg.mtu);
    }
    nic.Agree(loader, "transport.mtu", "Mtu", std::to_string(tr.mtu()), tr.mtu() == cfg.mtu);
    cfg.mtu = tr.mtu();
    const bool ccFromNic = tr.cc().empty();
    if (ccFromNic)
    {
        tr.set_cc(roce ? (cfg.rocev2.dcqcn ? "dcqcn" : "none") : cfg.congestionControl);
    }
    if (roce)
    {
        if (tr.cc() != "dcqcn" && tr.cc() != "none")
        {
            loader.Invalid("transport.cc", "'" + tr.cc() + "': rocev2 takes dcqcn or none");
        }
        nic.Agree(loader,
                  "transport.cc",
                  "Dcqcn",
                  tr.cc(),
                  (tr.cc() == "dcqcn") == cfg.rocev2.dcqcn);
        cfg.rocev2.dcqcn = tr.cc() == "dcqcn";
    }
    else
    {
        nic.Agree(loader,
                  "transport.cc",
                  "CongestionControl",
                  tr.cc(),
                  tr.cc() == cfg.congestionControl);
        if (!metaroce::IsPolicyName(metaroce::PolicyKind::CONGESTION_CONTROL, tr.cc()))
        {
            invalid("transport.cc",
                    "CongestionControl",
                    ccFromNic,
                    "'" + tr.cc() + "': expected " +
                        metaroce::PolicyChoices(metaroce::PolicyKind::CONGESTION_CONTROL));
        }
        cfg.congestionControl = tr.cc();
    }
    // RoCEv2 loss recovery (the field is ignored by metaroce): go-back-N or IRN.
    const bool recoveryFromNic = tr.rocev2_recovery().empty();
    if (recoveryFromNic)
    {
        tr.set_rocev2_recovery(cfg.rocev2.recovery);
    }
    if (roce)
    {
        nic.Agree(loader,
                  "transport.rocev2_recovery",
                  "RoceRecovery",
                  tr.rocev2_recovery(),
                  tr.rocev2_recovery() == cfg.rocev2.recovery);
    }
    if (!metaroce::IsPolicyName(metaroce::PolicyKind::ROCE_RECOVERY, tr.rocev2_recovery()))
    {
        invalid("transport.rocev2_recovery",
                "RoceRecovery",
                recoveryFromNic,
                "'" + tr.rocev2_recovery() + "': expected " +
                    metaroce::PolicyChoices(metaroce::PolicyKind::ROCE_RECOVERY));
    }
    cfg.rocev2.recovery = tr.rocev2_recovery();
    const bool schedulerFromNic = tr.path_scheduler().empty();
    if (schedulerFromNic)
    {
        tr.set_path_scheduler(cfg.pathScheduler);
    }
    if (!roce)
    {
        nic.Agree(loader,
                  "transport.path_scheduler",
                  "PathScheduler",
                  tr.path_scheduler(),
                  tr.path_scheduler() == cfg.pathScheduler);
    }
    if (!metaroce::IsPolicyName(metaroce::PolicyKind::PATH_SCHEDULER, tr.path_scheduler()))
    {
        invalid("transport.path_scheduler",
                "PathScheduler",
                schedulerFromNic,
                "'" + tr.path_scheduler() + "': expected " +
                    metaroce::PolicyChoices(metaroce::PolicyKind::PATH_SCHEDULER));
    }
    cfg.pathScheduler = tr.path_scheduler();
    if (tr.initial_path_window() < 0 || tr.max_path_window() < 0)
    {
        loader.Invalid(tr.initial_path_window() < 0 ? "transport.initial_path_window"
                                                    : "transport.max_path_window",
                       "must not be negative");
    }
    if (tr.initial_path_window() == 0)
    {
        tr.set_initial_path_window(cfg.initialPathWindow);
    }
    if (tr.max_path_window() == 0)
    {
        tr.set_max_path_window(cfg.maxPathWindow);
    }
    if (!roce)
    {
        nic.Agree(loader,
                  "transport.initial_path_window",
                  "InitialPathWindow",
                  Shortest(tr.initial_path_window()),
                  tr.initial_path_window() == cfg.initialPathWindow);
        nic.Agree(loader,
                  "transport.max_path_window",
                  "MaxPathWindow",
                  Shortest(tr.max_path_window()),
                  tr.max_path_window() == cfg.maxPathWindow);
    }
    cfg.initialPathWindow = tr.initial_path_window();
    cfg.maxPathWindow = tr.max_path_window();

    // Topology.
    pb::Topology& t = *s.mutable_topology();
    if (t.kind() == pb::Topology::KIND_UNSPECIFIED)
    {
        t.set_kind(pb::Topology::LEAF_SPINE);
    }
    if (t.kind() == pb::Topology::MULTIPLANE && t.planes() == 0)
    {
        t.set_planes(2);
    }
    if (t.planes() == 0)
    {
        t.set_planes(1);
    }
    if (t.planes() > 16)
    {
        loader.Invalid("topology.planes", "at most 16");
    }
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        if (t.k() == 0)
        {
            t.set_k(4);
        }
        if (t.tiers() == 0)
        {
            t.set_tiers(3);
        }
        if (t.k() % 2 != 0 || t.k() > 64)
        {
            loader.Invalid("topology.k", "must be even and at most 64");
        }
        if (t.tiers() != 2 && t.tiers() != 3)
        {
            loader.Invalid("topology.tiers", "must be 2 or 3");
        }
        break;
    case pb::Topology::SINGLE_SWITCH:
        if (t.hosts() == 0)
        {
            t.set_hosts(17);
        }
        if (t.hosts() < 2 || t.hosts() > 254)
        {
            loader.Invalid("topology.hosts", "must be 2 to 254");
        }
        break;
    default:
        if (t.leaves() == 0)
        {
            t.set_leaves(2);
        }
        if (t.hosts_per_leaf() == 0)
        {
            t.set_hosts_per_leaf(8);
        }
        if (t.oversubscription() == 0)
        {
            t.set_oversubscription(1);
        }
        if (t.hosts_per_leaf() > 254)
        {
            loader.Invalid("topology.hosts_per_leaf", "at most 254");
        }
        if (t.leaves() > 4096)
        {
            loader.Invalid("topology.leaves", "at most 4096");
        }
        if (!(t.oversubscription() > 0))
        {
            loader.Invalid("topology.oversubscription", "must be positive");
        }
        break;
    }
    if (t.link_rate_gbps() == 0)
    {
        t.set_link_rate_gbps(100);
    }
    if (!(t.link_rate_gbps() > 0) || t.link_rate_gbps() > 1e4)
    {
        loader.Invalid("topology.link_rate_gbps", "must be in (0, 10000]");
    }
    if (t.fabric_rate_gbps() == 0)
    {
        t.set_fabric_rate_gbps(t.link_rate_gbps());
    }
    if (!(t.fabric_rate_gbps() > 0) || t.fabric_rate_gbps() > 1e4)
    {
        loader.Invalid("topology.fabric_rate_gbps", "must be in (0, 10000]");
    }
    if (t.link_delay_ns() == 0)
    {
        t.set_link_delay_ns(1000);
    }
    if (t.link_delay_ns() < 0)
    {
        loader.Invalid("topology.link_delay_ns", "must not be negative");
    }
    if (t.has_ecn())
    {
        pb::Ecn& e = *t.mutable_ecn();
        if (e.pmax() < 0 || e.pmax() > 1)
        {
            loader.Invalid("topology.ecn.pmax", "must be in [0, 1]");
        }
        if (e.kmin_bytes() && e.kmax_bytes() && e.kmin_bytes() > e.kmax_bytes())
        {
            loader.Invalid("topology.ecn.kmin_bytes", "must not exceed kmax_bytes");
        }
    }
    if (!t.has_pfc())
    {
        t.set_pfc(roce);
    }
    for (int i = 0; i < t.switch_attributes_size(); ++i)
    {
        const std::string why = CheckAttribute(MetaRoceSwitch::GetTypeId(), t.switch_attributes(i));
        if (!why.empty())
        {
            loader.Invalid("topology.switch_attributes[" + std::to_string(i) + "].name", why);
        }
    }
    const uint32_t hosts = HostCount(t);
    if (hosts < 2)
    {
        loader.Invalid("topology", "needs at least 2 hosts");
    }
    if (hosts > 65536)
    {
        loader.Invalid("topology", std::to_string(hosts) + " hosts: at most 65536");
    }

    // Workload.
    pb::Workload& w = *s.mutable_workload();
    if (w.kind() == pb::Workload::KIND_UNSPECIFIED)
    {
        w.set_kind(pb::Workload::INCAST);
    }
    if (w.flow_bytes() == 0)
    {
        w.set_flow_bytes(1 << 20);
    }
    if (w.start_us() == 0)
    {
        w.set_start_us(1);
    }
    if (w.start_us() < 0)
    {
        loader.Invalid("workload.start_us", "must not be negative");
    }
    const uint64_t maxMessage = cfg.maxMessageSize;
    switch (w.kind())
    {
    case pb::Workload::INCAST:
        if (w.receiver() >= hosts)
        {
            loader.Invalid("workload.receiver",
                           "host " + std::to_string(w.receiver()) + " but the topology has " +
                               std::to_string(hosts) + " hosts");
        }
        if (w.senders() == 0)
        {
            w.set_senders(hosts - 1);
        }
        if (w.senders() > hosts - 1)
        {
            loader.Invalid("workload.senders",
                           "at most " + std::to_string(hosts - 1) + " (hosts minus the receiver)");
        }
        break;
    case pb::Workload::ALL_TO_ALL:
    case pb::Workload::RING_ALLREDUCE:
        if (w.hosts() == 0)
        {
            w.set_hosts(hosts);
        }
        if (w.hosts() < 2 || w.hosts() > hosts)
        {
            loader.Invalid("workload.hosts", "must be 2 to " + std::to_string(hosts));
        }
        if (w.kind() == pb::Workload::RING_ALLREDUCE)
        {
            if (w.channels() == 0)
            {
                w.set_channels(4);
            }
            if (w.channels() > 64)
            {
                loader.Invalid("workload.channels", "at most 64");
            }
            const uint64_t pieces = uint64_t(w.hosts()) * w.channels();
            if ((w.flow_bytes() + pieces - 1) / pieces > maxMessage)
            {
                loader.Invalid("workload.flow_bytes", "ring chunk exceeds the largest message");
            }
        }
        break;
    case pb::Workload::HTSIM_FILE:
        if (w.file().empty())
        {
            loader.Invalid("workload.kind", "HTSIM_FILE needs workload.file");
        }
        break;
    default:
        break;
    }
    if ((w.flow_bytes() + maxMessage - 1) / maxMessage > cfg.maxOutstandingWrs)
    {
        loader.Invalid("workload.flow_bytes", "needs more messages than MaxOutstandingWrs");
    }

    // Loss.
    pb::Loss& l = *s.mutable_loss();
    if (l.bernoulli() < 0 || l.bernoulli() >= 1)
    {
        loader.Invalid("loss.bernoulli", "must be in [0, 1)");
    }
    if (l.has_gilbert_elliott())
    {
        const pb::GilbertElliott& g = l.gilbert_elliott();
        for (const auto& [name, v] : std::vector<std::pair<std::string, double>>{{"p", g.p()},
                                                                                 {"r", g.r()},
                                                                                 {"h_g", g.h_g()},
                                                                                 {"h_b", g.h_b()}})
        {
            if (v < 0 || v > 1)
            {
                loader.Invalid("loss.gilbert_elliott." + name, "must be in [0, 1]");
            }
        }
        if (l.bernoulli() > 0 && g.p() > 0)
        {
            loader.Invalid("loss.gilbert_elliott", "use bernoulli or gilbert_elliott, not both");
        }
    }
    for (int i = 0; i < l.fail_plane_size(); ++i)
    {
        const std::string at = "loss.fail_plane[" + std::to_string(i) + "]";
        if (l.fail_plane(i).plane() >= t.planes())
        {
            loader.Invalid(at + ".plane",
                           "the topology has " + std::to_string(t.planes()) + " plane(s)");
        }
        if (l.fail_plane(i).stop_us() != 0 &&
            l.fail_plane(i).stop_us() <= l.fail_plane(i).start_us())
        {
            loader.Invalid(at + ".stop_us", "must be after start_us (0 = never)");
        }
    }
    for (int kind = 0; kind < 2; ++kind)
    {
        const auto& events = kind == 0 ? l.fail_link() : l.degrade_link();
        const std::string field = kind == 0 ? "loss.fail_link" : "loss.degrade_link";
        for (int i = 0; i < events.size(); ++i)
        {
            const std::string at = field + "[" + std::to_string(i) + "]";
            const pb::LinkEvent& e = events.Get(i);
            if (e.start_us() < 0 || (e.stop_us() != 0 && e.stop_us() <= e.start_us()))
            {
                loader.Invalid(at + ".stop_us", "start_us >= 0 and stop_us after it (0 = never)");
            }
            if (kind == 1 && !(e.fraction() > 0 && e.fraction() <= 1))
            {
                loader.Invalid(at + ".fraction", "must be in (0, 1]");
            }
        }
    }

    // Output.
    pb::Output& o = *s.mutable_output();
    if (o.goodput_interval_us() == 0)
    {
        o.set_goodput_interval_us(10);
    }
    if (!(o.goodput_interval_us() >= 0.01))
    {
        loader.Invalid("output.goodput_interval_us", "must be at least 0.01");
    }
    if (!o.has_per_host_goodput())
    {
        o.set_per_host_goodput(true);
    }
    if (!o.has_switch_ports())
    {
        o.set_switch_ports(true);
    }
    if (!o.has_flow_goodput())
    {
        o.set_flow_goodput(false);
    }
    if (!o.has_queue_peaks())
    {
        o.set_queue_peaks(false);
    }

    std::string why;
    if (!cfg.Validate(why))
    {
        loader.Invalid("transport", "the engine refuses the connection settings: " + why);
    }
}

} // namespace metaroce_run
