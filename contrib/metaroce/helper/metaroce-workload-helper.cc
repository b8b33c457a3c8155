/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-workload-helper.h"

#include "metaroce-fabric.h"
#include "metaroce-random.h"

#include "ns3/abort.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceWorkloadHelper");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceWorkloadHelper);

namespace
{

/**
 * Parse an unsigned decimal integer that must fill \p s.
 * \param s the text
 * \param[out] value the number
 * \return true on success
 */
bool
ParseUnsigned(const std::string& s, uint64_t& value)
{
    if (s.empty() || s[0] == '-' || s[0] == '+')
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno != 0 || end == s.c_str() || *end != '\0')
    {
        return false;
    }
    value = v;
    return true;
}

/**
 * Parse a non-negative finite decimal number that must fill \p s.
 * \param s the text
 * \param[out] value the number
 * \return true on success
 */
bool
ParseNonNegative(const std::string& s, double& value)
{
    if (s.empty())
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    {
        return false;
    }
    value = v;
    return true;
}

} // namespace

TypeId
MetaRoceWorkloadHelper::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceWorkloadHelper")
                            .SetParent<Object>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceWorkloadHelper>();
    return tid;
}

MetaRoceWorkloadHelper::MetaRoceWorkloadHelper()
{
}

MetaRoceWorkloadHelper::~MetaRoceWorkloadHelper()
{
}

void
MetaRoceWorkloadHelper::DoDispose()
{
    m_flowApps.clear();
    m_collectiveApps.clear();
    m_flowHelper.reset();
    m_collectiveHelper.reset();
    Object::DoDispose();
}

void
MetaRoceWorkloadHelper::Setup(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics)
{
    NS_ABORT_MSG_IF(m_flowHelper, "MetaRoceWorkloadHelper::Setup called twice");
    NS_ABORT_MSG_IF(nics.empty(), "no NICs");
    m_flowHelper = std::make_unique<MetaRoceFlowHelper>(fabric, nics);
    m_collectiveHelper = std::make_unique<MetaRoceCollectiveHelper>(fabric, nics);
    m_cfg = nics[0]->GetDefaultConnectionConfig();
    // Every NIC's traffic state now: it listens to the NIC's completions from here on, ahead
    // of trace sinks connected later.
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        MetaRoceTrafficHost::Get(nic);
    }
}

void
MetaRoceWorkloadHelper::SetConnectionConfig(const metaroce::ConnectionConfig& cfg)
{
    m_cfg = cfg;
}

const metaroce::ConnectionConfig&
MetaRoceWorkloadHelper::GetConnectionConfig() const
{
    return m_cfg;
}

void
MetaRoceWorkloadHelper::SetFlowOperation(MetaRoceFlowApplication::Operation op)
{
    m_operation = op;
}

void
MetaRoceWorkloadHelper::SetStopWhenDone(bool stop)
{
    m_stopWhenDone = stop;
    for (const Ptr<MetaRoceFlowApplication>& app : m_flowApps)
    {
        app->SetStopWhenDone(stop);
    }
    for (const Ptr<MetaRoceCollectiveApplication>& app : m_collectiveApps)
    {
        app->SetStopWhenDone(stop);
    }
}

Time
MetaRoceWorkloadHelper::StartDelay(Time start)
{
    const Time now = Simulator::Now();
    return start > now ? start - now : Time(0);
}

uint32_t
MetaRoceWorkloadHelper::AddFlow(uint32_t src, uint32_t dst, uint64_t bytes, Time start, int64_t id)
{
    NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
    const uint32_t index = static_cast<uint32_t>(m_flowApps.size());
    m_flowHelper->SetConnectionConfig(m_cfg);
    m_flowHelper->SetStopWhenDone(m_stopWhenDone);
    m_flowHelper->SetAttribute("Operation", EnumValue(m_operation));
    ApplicationContainer apps = m_flowHelper->Install(src, dst, bytes, id >= 0 ? id : index);
    apps.Start(StartDelay(start));
    m_flowApps.push_back(DynamicCast<MetaRoceFlowApplication>(apps.Get(0)));
    return index;
}

void
MetaRoceWorkloadHelper::AddIncast(const std::vector<uint32_t>& senders,
                                  uint32_t receiver,
                                  uint64_t bytes,
                                  Time start)
{
    for (uint32_t s : senders)
    {
        AddFlow(s, receiver, bytes, start);
    }
}

void
MetaRoceWorkloadHelper::AddPermutation(uint64_t bytes, Time start, uint64_t seed)
{
    NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
    const uint32_t n = m_flowHelper->GetHostCount();
    NS_ABORT_MSG_IF(n < 2, "a permutation needs two hosts");
    // Sattolo's algorithm: a uniformly random cyclic permutation, so nobody sends to itself.
    std::vector<uint32_t> dst(n);
    for (uint32_t i = 0; i < n; ++i)
    {
        dst[i] = i;
    }
    metaroce::Rng rng(seed);
    for (uint32_t i = n - 1; i > 0; --i)
    {
        const uint32_t j = static_cast<uint32_t>(rng.Below(i));
        std::swap(dst[i], dst[j]);
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        AddFlow(i, dst[i], bytes, start);
    }
}

void
MetaRoceWorkloadHelper::AddAllToAll(std::vector<uint32_t> hosts, uint64_t bytes, Time start)
{
    if (hosts.empty())
    {
        NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
        for (uint32_t i = 0; i < m_flowHelper->GetHostCount(); ++i)
        {
            hosts.push_back(i);
        }
    }
    for (uint32_t s : hosts)
    {
        for (uint32_t d : hosts)
        {
            if (s != d)
            {
                AddFlow(s, d, bytes, start);
            }
        }
    }
}

uint32_t
MetaRoceWorkloadHelper::AddRingAllReduce(const std::vector<uint32_t>& ranks,
                                         uint64_t bytesPerRank,
                                         uint32_t channels,
                                         Time start)
{
    NS_ABORT_MSG_IF(!m_collectiveHelper, "MetaRoceWorkloadHelper used before Setup()");
    const uint32_t index = static_cast<uint32_t>(m_collectiveApps.size());
    m_collectiveHelper->SetConnectionConfig(m_cfg);
    m_collectiveHelper->SetStopWhenDone(m_stopWhenDone);
    ApplicationContainer apps = m_collectiveHelper->Install(ranks, bytesPerRank, channels);
    apps.Start(StartDelay(start));
    m_collectiveApps.push_back(DynamicCast<MetaRoceCollectiveApplication>(apps.Get(0)));
    return index;
}

bool
MetaRoceWorkloadHelper::AllDone() const
{
    for (const Ptr<MetaRoceFlowApplication>& app : m_flowApps)
    {
        if (!app->IsFinished())
        {
            return false;
        }
    }
    for (const Ptr<MetaRoceCollectiveApplication>& app : m_collectiveApps)
    {
        if (!app->IsFinished())
        {
            return false;
        }
    }
    return true;
}

uint32_t
MetaRoceWorkloadHelper::GetFlowsDone() const
{
    uint32_t n = 0;
    for (const MetaRoceFlow& f : GetFlows())
    {
        n += f.done;
    }
    return n;
}

const std::vector<MetaRoceFlow>&
MetaRoceWorkloadHelper::GetFlows() const
{
    m_flows.resize(m_flowApps.size());
    for (size_t i = 0; i < m_flowApps.size(); ++i)
    {
        m_flows[i] = m_flowApps[i]->GetFlow();
    }
    return m_flows;
}

const std::vector<MetaRoceCollective>&
MetaRoceWorkloadHelper::GetCollectives() const
{
    m_collectives.resize(m_collectiveApps.size());
    for (size_t i = 0; i < m_collectiveApps.size(); ++i)
    {
        m_collectives[i] = m_collectiveApps[i]->GetCollective();
    }
    return m_collectives;
}

ApplicationContainer
MetaRoceWorkloadHelper::GetApplications() const
{
    ApplicationContainer apps;
    for (const Ptr<MetaRoceFlowApplication>& app : m_flowApps)
    {
        apps.Add(app);
    }
    for (const Ptr<MetaRoceCollectiveApplication>& app : m_collectiveApps)
    {
        apps.Add(app);
    }
    return apps;
}

uint32_t
MetaRoceWorkloadHelper::HopCount(uint32_t src, uint32_t dst)
{
    NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
    return m_flowHelper->HopCount(src, dst);
}

Time
MetaRoceWorkloadHelper::IdealFct(uint32_t src, uint32_t dst, uint64_t bytes)
{
    NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
    return m_flowHelper->IdealFct(src, dst, bytes, m_cfg.mtu);
}

void
MetaRoceWorkloadHelper::WriteFlows(std::ostream& os) const
{
    os << "id src dst bytes start_us finish_us fct_us ideal_us slowdown\n";
    os << std::setprecision(10);
    for (const MetaRoceFlow& f : GetFlows())
    {
        os << f.id << ' ' << f.src << ' ' << f.dst << ' ' << f.bytes << ' '
           << f.start.GetSeconds() * 1e6 << ' ';
        if (f.done)
        {
            os << f.finish.GetSeconds() * 1e6 << ' ' << f.Fct().GetSeconds() * 1e6;
        }
        else
        {
            os << "-1 -1";
        }
        os << ' ' << f.idealFct.GetSeconds() * 1e6 << ' ' << (f.done ? f.Slowdown() : -1.0) << '\n';
    }
}

bool
MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(std::istream& in,
                                                   MetaRoceHtsimMatrix& out,
                                                   std::string& error)
{
    out = MetaRoceHtsimMatrix();
    bool haveNodes = false;
    bool haveConnections = false;
    std::string text;
    uint32_t lineNo = 0;
    auto fail = [&](const std::string& what) {
        std::ostringstream os;
        os << "line " << lineNo << ": " << what;
        error = os.str();
        return false;
    };
    while (std::getline(in, text))
    {
        ++lineNo;
        if (!text.empty() && text.back() == '\r')
        {
            text.pop_back();
        }
        std::istringstream ls(text);
        std::vector<std::string> tok;
        for (std::string t; ls >> t;)
        {
            tok.push_back(t);
        }
        if (tok.empty() || tok[0][0] == '#')
        {
            continue;
        }
        uint64_t value = 0;
        if (tok[0] == "Nodes" || tok[0] == "Connections" || tok[0] == "Triggers")
        {
            if (tok.size() != 2 || !ParseUnsigned(tok[1], value) ||
                value > std::numeric_limits<uint32_t>::max())
            {
                return fail("expected '" + tok[0] + " <count>', got '" + text + "'");
            }
            if (tok[0] == "Nodes")
            {
                out.nodes = static_cast<uint32_t>(value);
                haveNodes = true;
            }
            else if (tok[0] == "Connections")
            {
                out.connections = static_cast<uint32_t>(value);
                haveConnections = true;
            }
            continue;
        }
        if (tok[0].rfind("trigger", 0) == 0 || tok[0] == "id" || tok[0] == "type")
        {
            continue; // htsim trigger definitions: not modelled
        }
        const size_t arrow = tok[0].find("->");
        if (arrow == std::string::npos)
        {
            return fail("expected 'src->dst ...', 'Nodes N' or 'Connections C', got '" + text +
                        "'");
        }
        if (!haveNodes)
        {
            return fail("flow before the 'Nodes N' line");
        }
        MetaRoceHtsimFlow f;
        f.line = lineNo;
        uint64_t src = 0;
        uint64_t dst = 0;
        if (!ParseUnsigned(tok[0].substr(0, arrow), src) ||
            !ParseUnsigned(tok[0].substr(arrow + 2), dst))
        {
            return fail("bad endpoints '" + tok[0] + "' (expected src->dst)");
        }
        if (src >= out.nodes || dst >= out.nodes)
        {
            return fail("node beyond 'Nodes " + std::to_string(out.nodes) + "' in '" + tok[0] +
                        "'");
        }
        if (src == dst)
        {
            return fail("flow from node " + std::to_string(src) + " to itself");
        }
        f.src = static_cast<uint32_t>(src);
        f.dst = static_cast<uint32_t>(dst);
        bool haveStart = false;
        bool haveSize = false;
        for (size_t k = 1; k < tok.size(); k += 2)
        {
            const std::string& key = tok[k];
            if (k + 1 >= tok.size())
            {
                return fail("'" + key + "' without a value");
            }
            const std::string& val = tok[k + 1];
            if (key == "id")
            {
                if (!ParseUnsigned(val, value) || value > std::numeric_limits<uint32_t>::max())
                {
                    return fail("bad id '" + val + "'");
                }
                f.id = static_cast<uint32_t>(value);
            }
            else if (key == "start")
            {
                if (!ParseNonNegative(val, f.startUs))
                {
                    return fail("bad start '" + val + "' (microseconds)");
                }
                haveStart = true;
            }
            else if (key == "size")
            {
                if (!ParseUnsigned(val, value) || value == 0)
                {
                    return fail("bad size '" + val + "' (bytes, at least 1)");
                }
                f.bytes = value;
                haveSize = true;
            }
            else if (key == "trigger" || key == "send_done_trigger" || key == "recv_done_trigger" ||
                     key == "priority")
            {
                continue; // htsim extras not modelled here
            }
            else
            {
                return fail("unknown field '" + key + "'");
            }
        }
        if (!haveSize)
        {
            return fail("flow without 'size <bytes>'");
        }
        if (!haveStart)
        {
            return fail("flow without 'start <us>'");
        }
        out.flows.push_back(f);
    }
    lineNo = 0;
    if (!haveNodes)
    {
        error = "no 'Nodes N' line";
        return false;
    }
    if (haveConnections && out.connections != out.flows.size())
    {
        error = "'Connections " + std::to_string(out.connections) + "' but " +
                std::to_string(out.flows.size()) + " flows";
        return false;
    }
    return true;
}

bool
MetaRoceWorkloadHelper::AddHtsimConnectionMatrix(const std::string& path, std::string& error)
{
    std::ifstream in(path);
    if (!in)
    {
        error = "cannot open '" + path + "'";
        return false;
    }
    MetaRoceHtsimMatrix matrix;
    if (!ParseHtsimConnectionMatrix(in, matrix, error))
    {
        error = path + ": " + error;
        return false;
    }
    return AddHtsimConnectionMatrix(matrix, error);
}

bool
MetaRoceWorkloadHelper::AddHtsimConnectionMatrix(const MetaRoceHtsimMatrix& matrix,
                                                 std::string& error)
{
    NS_ABORT_MSG_IF(!m_flowHelper, "MetaRoceWorkloadHelper used before Setup()");
    if (matrix.nodes > m_flowHelper->GetHostCount())
    {
        error = "the matrix has " + std::to_string(matrix.nodes) + " nodes but the fabric " +
                std::to_string(m_flowHelper->GetHostCount()) + " hosts";
        return false;
    }
    for (const MetaRoceHtsimFlow& f : matrix.flows)
    {
        AddFlow(f.src,
                f.dst,
                f.bytes,
                NanoSeconds(static_cast<int64_t>(std::llround(f.startUs * 1000.0))),
                f.id);
    }
    return true;
}

} // namespace ns3
