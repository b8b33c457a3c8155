/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-collective-application.h"

#include "metaroce-partition.h"
#include "metaroce-stack-helper.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <tuple>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceCollectiveApplication");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceCollectiveApplication);

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
MetaRoceCollectiveApplication::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceCollectiveApplication")
                            .SetParent<MetaRoceTrafficApplication>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceCollectiveApplication>();
    return tid;
}

MetaRoceCollectiveApplication::MetaRoceCollectiveApplication()
{
}

MetaRoceCollectiveApplication::~MetaRoceCollectiveApplication()
{
}

void
MetaRoceCollectiveApplication::DoDispose()
{
    m_nics.clear();
    MetaRoceTrafficApplication::DoDispose();
}

void
MetaRoceCollectiveApplication::SetRing(const std::vector<Ptr<MetaRoceNic>>& nics,
                                       const std::vector<uint32_t>& hosts,
                                       uint64_t bytesPerRank,
                                       uint32_t channels,
                                       const metaroce::ConnectionConfig& cfg)
{
    NS_ABORT_MSG_IF(nics.size() < 2, "a ring needs two ranks");
    NS_ABORT_MSG_IF(hosts.size() != nics.size(), "a ring needs a host index per rank");
    NS_ABORT_MSG_IF(channels == 0, "a ring needs a channel");
    m_nics = nics;
    m_cfg = cfg;
    m_record.ranks = hosts;
    m_record.bytesPerRank = bytesPerRank;
    m_record.channels = channels;
    const uint64_t pieces = uint64_t(nics.size()) * channels;
    m_record.chunkBytes = std::max<uint64_t>(1, (bytesPerRank + pieces - 1) / pieces);
    NS_ABORT_MSG_IF(m_record.chunkBytes > cfg.maxMessageSize,
                    "ring chunk of " << m_record.chunkBytes << " bytes exceeds MaxMessageSize");
    m_rankChannels.assign(nics.size() * channels, RankChannel());
}

MetaRoceCollective
MetaRoceCollectiveApplication::GetCollective() const
{
    MetaRoceCollective c = m_record;
    if (!m_started)
    {
        c.start = m_startTime;
    }
    return c;
}

bool
MetaRoceCollectiveApplication::CheckFinishedOnAllRanks(bool& finished) const
{
    const uint64_t pairs = MetaRoceSumOverRanks(m_record.ranksDone);
    const uint64_t failed = MetaRoceSumOverRanks(m_record.failed ? 1 : 0);
    finished = failed > 0 || pairs >= m_record.ranks.size() * m_record.channels;
    return true;
}

void
MetaRoceCollectiveApplication::StartApplication()
{
    NS_LOG_FUNCTION(this);
    if (m_stopped)
    {
        return;
    }
    NS_ABORT_MSG_IF(m_nics.empty(), "MetaRoceCollectiveApplication started without SetRing");
    m_started = true;
    m_record.start = Simulator::Now();
    const uint32_t n = static_cast<uint32_t>(m_nics.size());
    const uint32_t channels = m_record.channels;
    const uint32_t steps = 2 * (n - 1);
    const bool streams = m_cfg.transport == "metaroce";
    metaroce::ConnectionConfig cfg = m_cfg;
    cfg.maxPostedRecvs = std::max(cfg.maxPostedRecvs, steps);
    if (streams)
    {
        cfg.maxStreams = std::max<uint16_t>(cfg.maxStreams, static_cast<uint16_t>(channels));
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        const uint32_t next = (r + 1) % n;
        Ptr<MetaRoceTrafficHost> hostA = MetaRoceTrafficHost::Get(m_nics[r]);
        Ptr<MetaRoceTrafficHost> hostB = MetaRoceTrafficHost::Get(m_nics[next]);
        hostA->Region();
        hostB->Region();
        uint32_t qa = 0;
        uint32_t qb = 0;
        for (uint32_t ch = 0; ch < channels; ++ch)
        {
            if (ch == 0 || !streams)
            {
                std::tie(qa, qb) = MetaRoceConnectionHelper::Connect(m_nics[r], m_nics[next], cfg);
                hostA->Listen(qa,
                              MakeCallback(&MetaRoceCollectiveApplication::OnCompletion, this)
                                  .Bind(true, r, ch));
                hostB->Listen(qb,
                              MakeCallback(&MetaRoceCollectiveApplication::OnCompletion, this)
                                  .Bind(false, next, ch));
            }
            RankChannel& rc = m_rankChannels[r * channels + ch];
            rc.sendQpn = qa;
            rc.stream = streams ? static_cast<uint16_t>(ch) : 0;
            for (uint32_t s = 0; s < steps && MetaRoceIsLocal(m_nics[next]->GetNode()); ++s)
            {
                metaroce::RecvWr rw;
                rw.wrId = s;
                rw.streamId = rc.stream;
                const metaroce::PostStatus st = m_nics[next]->PostRecv(qb, rw);
                NS_ABORT_MSG_IF(st != metaroce::PostStatus::OK,
                                "ring PostRecv: " << metaroce::PostStatusName(st));
            }
        }
    }
    for (uint32_t r = 0; r < n; ++r)
    {
        for (uint32_t ch = 0; ch < channels && MetaRoceIsLocal(m_nics[r]->GetNode()); ++ch)
        {
            PostChunk(r, ch);
        }
    }
}

void
MetaRoceCollectiveApplication::StopApplication()
{
    NS_LOG_FUNCTION(this);
    m_stopped = true;
    if (!m_started)
    {
        NotifyFinished(); // it never will start: nothing to wait for
    }
}

void
MetaRoceCollectiveApplication::PostChunk(uint32_t rank, uint32_t channel)
{
    RankChannel& rc = m_rankChannels[rank * m_record.channels + channel];
    Ptr<MetaRoceNic> nic = m_nics[rank];
    const metaroce::MemoryRegion srcRegion = MetaRoceTrafficHost::Get(nic)->Region();
    const metaroce::MemoryRegion dstRegion =
        MetaRoceTrafficHost::Get(m_nics[(rank + 1) % m_nics.size()])->Region();
    metaroce::SendWr wr;
    wr.wrId = rc.sent;
    wr.opcode = metaroce::WrOpcode::RDMA_WRITE_WITH_IMM;
    wr.sge = {srcRegion.addr, static_cast<uint32_t>(m_record.chunkBytes), srcRegion.lkey};
    wr.remoteAddr = dstRegion.addr;
    wr.rkey = dstRegion.rkey;
    wr.immData = rc.sent;
    wr.streamId = rc.stream;
    wr.signaled = false;
    ++rc.sent;
    const metaroce::PostStatus st = nic->PostSend(rc.sendQpn, wr);
    if (st != metaroce::PostStatus::OK && !m_record.failed)
    {
        NS_LOG_WARN("ring PostSend: " << metaroce::PostStatusName(st));
        Fail();
    }
}

void
MetaRoceCollectiveApplication::Fail()
{
    m_record.failed = true;
    NotifyFinished();
}

void
MetaRoceCollectiveApplication::OnCompletion(bool sender,
                                            uint32_t rank,
                                            uint32_t channel,
                                            const metaroce::Completion& completion)
{
    if (m_record.done || m_record.failed)
    {
        return;
    }
    if (completion.status != metaroce::WcStatus::SUCCESS)
    {
        NS_LOG_WARN("ring: " << metaroce::WcStatusName(completion.status));
        Fail();
        return;
    }
    if (sender)
    {
        return;
    }
    if (m_cfg.transport == "metaroce")
    {
        channel = completion.streamId;
    }
    RankChannel& rc = m_rankChannels[rank * m_record.channels + channel];
    const uint32_t steps = 2 * (static_cast<uint32_t>(m_nics.size()) - 1);
    ++rc.received;
    if (rc.received == steps)
    {
        m_record.lastRankDone = Simulator::Now();
        if (++m_record.ranksDone == m_nics.size() * m_record.channels)
        {
            m_record.done = true;
            m_record.finish = Simulator::Now();
            NotifyFinished();
        }
    }
    // The chunk received in step s is reduced and forwarded in step s + 1.
    if (rc.sent < steps && rc.sent <= rc.received)
    {
        PostChunk(rank, channel);
    }
}

} // namespace ns3
