/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-workload-helper.h"

#include "metaroce-channel.h"
#include "metaroce-fabric.h"
#include "metaroce-net-device.h"
#include "metaroce-partition.h"
#include "metaroce-random.h"
#include "metaroce-stack-helper.h"

#include "ns3/abort.h"
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
#include <queue>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceWorkloadHelper");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceWorkloadHelper);

namespace
{

/// Size of the virtual region each NIC exposes to workloads (no bytes behind it).
constexpr uint64_t VIRTUAL_REGION_BYTES = uint64_t(1) << 46;
/// Bytes of an ACK frame on the wire, for the ideal FCT.
constexpr uint64_t ACK_WIRE_BYTES = 64 + metaroce::WIRE_OVERHEAD_BYTES;

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

double
MetaRoceCollective::AlgorithmBandwidth() const
{
    const double seconds = (finish - start).GetSeconds();
    return seconds > 0 ? bytesPerRank * 8.0 / seconds : 0;
}

double
MetaRoceCollective::BusBandwidth() const
{
    const double n = static_cast<double>(ranks.size());
    return AlgorithmBandwidth() * 2 * (n - 1) / n;
}

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
    m_fabric = nullptr;
    m_nics.clear();
    Object::DoDispose();
}

void
MetaRoceWorkloadHelper::Setup(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics)
{
    NS_ABORT_MSG_IF(!m_nics.empty(), "MetaRoceWorkloadHelper::Setup called twice");
    NS_ABORT_MSG_IF(nics.empty(), "no NICs");
    m_fabric = fabric;
    m_nics = nics;
    m_regions.assign(nics.size(), metaroce::MemoryRegion());
    m_cfg = nics[0]->GetDefaultConnectionConfig();
    for (uint32_t i = 0; i < nics.size(); ++i)
    {
        nics[i]->TraceConnectWithoutContext(
            "Completion",
            MakeCallback(&MetaRoceWorkloadHelper::OnCompletion, this).Bind(i));
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
MetaRoceWorkloadHelper::SetStopWhenDone(bool stop)
{
    const bool start = stop && !m_stopWhenDone;
    m_stopWhenDone = stop;
    if (start && MetaRoceGetRankCount() > 1)
    {
        // A rank sees only the completions of the hosts it owns: all ranks compare notes
        // periodically (a collective call, at the same simulated times on every rank).
        Simulator::Schedule(m_globalCheckInterval, &MetaRoceWorkloadHelper::GlobalCheck, this);
    }
}

void
MetaRoceWorkloadHelper::GlobalCheck()
{
    if (!m_stopWhenDone)
    {
        return;
    }
    // Each flow is counted by the rank that owns its source (or, on a receive failure, its
    // destination); a collective's (rank, channel) pairs by the ranks that own their hosts.
    const uint64_t finished = MetaRoceSumOverRanks(m_flowsFinished);
    bool collectivesFinished = true;
    for (const MetaRoceCollective& c : m_collectives)
    {
        const uint64_t pairs = MetaRoceSumOverRanks(c.ranksDone);
        const uint64_t failed = MetaRoceSumOverRanks(c.failed ? 1 : 0);
        collectivesFinished =
            collectivesFinished && (failed > 0 || pairs >= c.ranks.size() * c.channels);
    }
    if (finished >= m_flows.size() && collectivesFinished)
    {
        Simulator::Stop();
        return;
    }
    Simulator::Schedule(m_globalCheckInterval, &MetaRoceWorkloadHelper::GlobalCheck, this);
}

const metaroce::MemoryRegion&
MetaRoceWorkloadHelper::Region(uint32_t host)
{
    metaroce::MemoryRegion& r = m_regions[host];
    if (r.lkey == 0)
    {
        r = m_nics[host]->RegisterMemory(nullptr,
                                         VIRTUAL_REGION_BYTES,
                                         metaroce::ACCESS_LOCAL_WRITE |
                                             metaroce::ACCESS_REMOTE_WRITE |
                                             metaroce::ACCESS_REMOTE_READ);
        NS_ABORT_MSG_IF(r.lkey == 0, "RegisterMemory failed on host " << host);
    }
    return r;
}

uint32_t
MetaRoceWorkloadHelper::AddFlow(uint32_t src, uint32_t dst, uint64_t bytes, Time start, int64_t id)
{
    NS_ABORT_MSG_IF(m_nics.empty(), "MetaRoceWorkloadHelper used before Setup()");
    NS_ABORT_MSG_IF(src >= m_nics.size() || dst >= m_nics.size(),
                    "flow " << src << "->" << dst << " beyond the " << m_nics.size() << " hosts");
    NS_ABORT_MSG_IF(src == dst, "flow from host " << src << " to itself");
    NS_ABORT_MSG_IF(bytes == 0, "empty flow");
    MetaRoceFlow f;
    const uint32_t index = static_cast<uint32_t>(m_flows.size());
    f.id = id >= 0 ? static_cast<uint32_t>(id) : index;
    f.src = src;
    f.dst = dst;
    f.bytes = bytes;
    f.start = start;
    f.idealFct = IdealFct(src, dst, bytes);
    m_flows.push_back(f);
    const Time now = Simulator::Now();
    Simulator::Schedule(start > now ? start - now : Time(0),
                        &MetaRoceWorkloadHelper::StartFlow,
                        this,
                        index);
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
    const uint32_t n = static_cast<uint32_t>(m_nics.size());
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
        for (uint32_t i = 0; i < m_nics.size(); ++i)
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
    NS_ABORT_MSG_IF(m_nics.empty(), "MetaRoceWorkloadHelper used before Setup()");
    NS_ABORT_MSG_IF(ranks.size() < 2, "a ring needs two ranks");
    NS_ABORT_MSG_IF(channels == 0, "a ring needs a channel");
    for (uint32_t r : ranks)
    {
        NS_ABORT_MSG_IF(r >= m_nics.size(), "rank host " << r << " beyond the fabric");
    }
    MetaRoceCollective c;
    c.ranks = ranks;
    c.bytesPerRank = bytesPerRank;
    c.channels = channels;
    const uint64_t pieces = uint64_t(ranks.size()) * channels;
    c.chunkBytes = std::max<uint64_t>(1, (bytesPerRank + pieces - 1) / pieces);
    NS_ABORT_MSG_IF(c.chunkBytes > m_cfg.maxMessageSize,
                    "ring chunk of " << c.chunkBytes << " bytes exceeds MaxMessageSize");
    c.start = start;
    const uint32_t index = static_cast<uint32_t>(m_collectives.size());
    m_collectives.push_back(c);
    m_rankChannels.emplace_back(ranks.size() * channels);
    const Time now = Simulator::Now();
    Simulator::Schedule(start > now ? start - now : Time(0),
                        &MetaRoceWorkloadHelper::StartCollective,
                        this,
                        index);
    return index;
}

void
MetaRoceWorkloadHelper::StartFlow(uint32_t i)
{
    MetaRoceFlow& f = m_flows[i];
    Ptr<MetaRoceNic> a = m_nics[f.src];
    Ptr<MetaRoceNic> b = m_nics[f.dst];
    const uint64_t maxMessage = m_cfg.maxMessageSize;
    const uint64_t messages = (f.bytes + maxMessage - 1) / maxMessage;
    NS_ABORT_MSG_IF(messages > m_cfg.maxOutstandingWrs,
                    "flow of " << f.bytes << " bytes needs " << messages
                               << " messages: raise MaxMessageSize or MaxOutstandingWrs");
    const metaroce::MemoryRegion& srcRegion = Region(f.src);
    const metaroce::MemoryRegion& dstRegion = Region(f.dst);
    auto [qa, qb] = MetaRoceConnectionHelper::Connect(a, b, m_cfg);
    f.srcQpn = qa;
    f.dstQpn = qb;
    m_uses[Key(f.src, qa)] = ConnectionUse{false, i, true, 0, 0};
    m_uses[Key(f.dst, qb)] = ConnectionUse{false, i, false, 0, 0};
    // Distributed runs: every rank sets up both queue pairs (QPNs stay identical across
    // ranks), but only the rank that owns a host posts work on it.
    const bool srcLocal = MetaRoceIsLocal(m_fabric ? m_fabric->GetHost(f.src) : nullptr);
    const bool dstLocal = MetaRoceIsLocal(m_fabric ? m_fabric->GetHost(f.dst) : nullptr);
    metaroce::RecvWr rw;
    rw.wrId = i;
    if (dstLocal && b->PostRecv(qb, rw) != metaroce::PostStatus::OK)
    {
        f.failed = true;
        ++m_flowsFinished;
        CheckDone();
        return;
    }
    uint64_t offset = 0;
    for (uint64_t m = 0; m < messages && srcLocal; ++m)
    {
        const uint64_t len = std::min<uint64_t>(maxMessage, f.bytes - offset);
        const bool last = m + 1 == messages;
        metaroce::SendWr wr;
        wr.wrId = i;
        wr.opcode = last ? metaroce::WrOpcode::RDMA_WRITE_WITH_IMM : metaroce::WrOpcode::RDMA_WRITE;
        wr.sge = {srcRegion.addr, static_cast<uint32_t>(len), srcRegion.lkey};
        wr.remoteAddr = dstRegion.addr;
        wr.rkey = dstRegion.rkey;
        wr.immData = f.id;
        wr.signaled = last;
        const metaroce::PostStatus st = a->PostSend(qa, wr);
        if (st != metaroce::PostStatus::OK)
        {
            NS_LOG_WARN("flow " << f.id << ": PostSend " << metaroce::PostStatusName(st));
            m_flows[i].failed = true;
            ++m_flowsFinished;
            CheckDone();
            return;
        }
        offset += len;
    }
}

void
MetaRoceWorkloadHelper::StartCollective(uint32_t ci)
{
    MetaRoceCollective& c = m_collectives[ci];
    const uint32_t n = static_cast<uint32_t>(c.ranks.size());
    const uint32_t steps = 2 * (n - 1);
    const bool streams = m_cfg.transport == "metaroce";
    metaroce::ConnectionConfig cfg = m_cfg;
    cfg.maxPostedRecvs = std::max(cfg.maxPostedRecvs, steps);
    if (streams)
    {
        cfg.maxStreams = std::max<uint16_t>(cfg.maxStreams, static_cast<uint16_t>(c.channels));
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        const uint32_t next = (r + 1) % n;
        const uint32_t hostA = c.ranks[r];
        const uint32_t hostB = c.ranks[next];
        Region(hostA);
        Region(hostB);
        uint32_t qa = 0;
        uint32_t qb = 0;
        for (uint32_t ch = 0; ch < c.channels; ++ch)
        {
            if (ch == 0 || !streams)
            {
                std::tie(qa, qb) =
                    MetaRoceConnectionHelper::Connect(m_nics[hostA], m_nics[hostB], cfg);
                m_uses[Key(hostA, qa)] = ConnectionUse{true, ci, true, r, ch};
                m_uses[Key(hostB, qb)] = ConnectionUse{true, ci, false, next, ch};
            }
            RankChannel& rc = m_rankChannels[ci][r * c.channels + ch];
            rc.sendQpn = qa;
            rc.stream = streams ? static_cast<uint16_t>(ch) : 0;
            for (uint32_t s = 0; s < steps && MetaRoceIsLocal(m_fabric->GetHost(hostB)); ++s)
            {
                metaroce::RecvWr rw;
                rw.wrId = (uint64_t(ci) << 32) | s;
                rw.streamId = rc.stream;
                const metaroce::PostStatus st = m_nics[hostB]->PostRecv(qb, rw);
                NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                                "ring PostRecv: " << metaroce::PostStatusName(st));
            }
        }
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        for (uint32_t ch = 0; ch < c.channels && MetaRoceIsLocal(m_fabric->GetHost(c.ranks[r]));
             ++ch)
        {
            PostChunk(ci, r, ch);
        }
    }
}

void
MetaRoceWorkloadHelper::PostChunk(uint32_t ci, uint32_t rank, uint32_t channel)
{
    MetaRoceCollective& c = m_collectives[ci];
    RankChannel& rc = m_rankChannels[ci][rank * c.channels + channel];
    const uint32_t host = c.ranks[rank];
    const uint32_t peer = c.ranks[(rank + 1) % c.ranks.size()];
    const metaroce::MemoryRegion& srcRegion = Region(host);
    const metaroce::MemoryRegion& dstRegion = Region(peer);
    metaroce::SendWr wr;
    wr.wrId = (uint64_t(ci) << 32) | rc.sent;
    wr.opcode = metaroce::WrOpcode::RDMA_WRITE_WITH_IMM;
    wr.sge = {srcRegion.addr, static_cast<uint32_t>(c.chunkBytes), srcRegion.lkey};
    wr.remoteAddr = dstRegion.addr;
    wr.rkey = dstRegion.rkey;
    wr.immData = rc.sent;
    wr.streamId = rc.stream;
    wr.signaled = false;
    ++rc.sent;
    const metaroce::PostStatus st = m_nics[host]->PostSend(rc.sendQpn, wr);
    if (st != metaroce::PostStatus::OK && !c.failed)
    {
        NS_LOG_WARN("ring PostSend: " << metaroce::PostStatusName(st));
        c.failed = true;
        ++m_collectivesFinished;
        CheckDone();
    }
}

void
MetaRoceWorkloadHelper::OnCompletion(uint32_t host, const metaroce::Completion& completion)
{
    auto it = m_uses.find(Key(host, completion.connectionId));
    if (it == m_uses.end())
    {
        return;
    }
    const ConnectionUse use = it->second;
    const bool ok = completion.status == metaroce::WcStatus::SUCCESS;
    if (!use.collective)
    {
        MetaRoceFlow& f = m_flows[use.index];
        if (f.done || f.failed)
        {
            return;
        }
        if (!ok)
        {
            NS_LOG_WARN("flow " << f.id << ": " << metaroce::WcStatusName(completion.status));
            f.failed = true;
            ++m_flowsFinished;
            CheckDone();
            return;
        }
        if (use.sender)
        {
            f.done = true;
            f.finish = Simulator::Now();
            ++m_flowsFinished;
            CheckDone();
        }
        else
        {
            f.received = true;
            f.receiverFinish = Simulator::Now();
        }
        return;
    }
    MetaRoceCollective& c = m_collectives[use.index];
    if (c.done || c.failed)
    {
        return;
    }
    if (!ok)
    {
        NS_LOG_WARN("ring: " << metaroce::WcStatusName(completion.status));
        c.failed = true;
        ++m_collectivesFinished;
        CheckDone();
        return;
    }
    if (use.sender)
    {
        return;
    }
    const uint32_t channel = m_cfg.transport == "metaroce" ? completion.streamId : use.channel;
    RankChannel& rc = m_rankChannels[use.index][use.rank * c.channels + channel];
    const uint32_t steps = 2 * (static_cast<uint32_t>(c.ranks.size()) - 1);
    ++rc.received;
    if (rc.received == steps)
    {
        c.lastRankDone = Simulator::Now();
        if (++c.ranksDone == c.ranks.size() * c.channels)
        {
            c.done = true;
            c.finish = Simulator::Now();
            ++m_collectivesFinished;
            CheckDone();
        }
    }
    // The chunk received in step s is reduced and forwarded in step s + 1.
    if (rc.sent < steps && rc.sent <= rc.received)
    {
        PostChunk(use.index, use.rank, channel);
    }
}

void
MetaRoceWorkloadHelper::CheckDone()
{
    if (m_stopWhenDone && MetaRoceGetRankCount() == 1 && AllDone())
    {
        Simulator::Stop();
    }
}

bool
MetaRoceWorkloadHelper::AllDone() const
{
    return m_flowsFinished == m_flows.size() && m_collectivesFinished == m_collectives.size();
}

uint32_t
MetaRoceWorkloadHelper::GetFlowsDone() const
{
    uint32_t n = 0;
    for (const MetaRoceFlow& f : m_flows)
    {
        n += f.done;
    }
    return n;
}

const std::vector<MetaRoceFlow>&
MetaRoceWorkloadHelper::GetFlows() const
{
    return m_flows;
}

const std::vector<MetaRoceCollective>&
MetaRoceWorkloadHelper::GetCollectives() const
{
    return m_collectives;
}

uint32_t
MetaRoceWorkloadHelper::HopCount(uint32_t src, uint32_t dst)
{
    if (!m_fabric)
    {
        return 0;
    }
    if (m_adjacency.empty())
    {
        uint32_t maxId = 0;
        for (const MetaRoceLink& l : m_fabric->GetLinks())
        {
            maxId = std::max({maxId, l.nodeA->GetId(), l.nodeB->GetId()});
        }
        m_adjacency.assign(maxId + 1, {});
        for (const MetaRoceLink& l : m_fabric->GetLinks())
        {
            if (l.plane != 0)
            {
                continue;
            }
            m_adjacency[l.nodeA->GetId()].push_back(l.nodeB->GetId());
            m_adjacency[l.nodeB->GetId()].push_back(l.nodeA->GetId());
        }
        m_hopCache.assign(m_fabric->GetHostCount(), {});
        m_hostOfNode.assign(maxId + 1, -1);
        for (uint32_t h = 0; h < m_fabric->GetHostCount(); ++h)
        {
            const uint32_t id = m_fabric->GetHost(h)->GetId();
            if (id < m_hostOfNode.size())
            {
                m_hostOfNode[id] = h;
            }
        }
    }
    std::vector<int32_t>& dist = m_hopCache[src];
    if (dist.empty())
    {
        dist.assign(m_adjacency.size(), -1);
        std::queue<uint32_t> q;
        const uint32_t from = m_fabric->GetHost(src)->GetId();
        dist[from] = 0;
        q.push(from);
        while (!q.empty())
        {
            const uint32_t u = q.front();
            q.pop();
            // Hosts do not forward: only the source expands.
            if (u != from && m_hostOfNode[u] >= 0)
            {
                continue;
            }
            for (uint32_t v : m_adjacency[u])
            {
                if (dist[v] < 0)
                {
                    dist[v] = dist[u] + 1;
                    q.push(v);
                }
            }
        }
    }
    const uint32_t to = m_fabric->GetHost(dst)->GetId();
    return to < dist.size() && dist[to] > 0 ? static_cast<uint32_t>(dist[to]) : 0;
}

Time
MetaRoceWorkloadHelper::IdealFct(uint32_t src, uint32_t dst, uint64_t bytes)
{
    const double rate = std::min(m_nics[src]->GetLineRateBps(), m_nics[dst]->GetLineRateBps());
    const double portRate =
        static_cast<double>(m_nics[src]->GetPort(0)->GetDataRate().GetBitRate());
    const uint32_t hops = HopCount(src, dst);
    Time delay(0);
    if (m_fabric && !m_fabric->GetLinks().empty())
    {
        delay = m_fabric->GetLinks()[0].channel->GetDelay();
    }
    const double dataWire =
        metaroce::Endpoint::MaxDatagramSize(m_cfg.mtu) + metaroce::WIRE_OVERHEAD_BYTES;
    const double perHop = (dataWire + ACK_WIRE_BYTES) * 8.0 / portRate;
    const double seconds = bytes * 8.0 / rate + hops * (2 * delay.GetSeconds() + perHop);
    return Seconds(seconds);
}

void
MetaRoceWorkloadHelper::WriteFlows(std::ostream& os) const
{
    os << "id src dst bytes start_us finish_us fct_us ideal_us slowdown\n";
    os << std::setprecision(10);
    for (const MetaRoceFlow& f : m_flows)
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
    if (matrix.nodes > m_nics.size())
    {
        error = "the matrix has " + std::to_string(matrix.nodes) + " nodes but the fabric " +
                std::to_string(m_nics.size()) + " hosts";
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
