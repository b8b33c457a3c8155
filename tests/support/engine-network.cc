/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "engine-network.h"

#include "metaroce-wire.h"

#include <algorithm>
#include <cstdlib>

namespace metaroce
{
namespace test
{

EngineNetwork::EngineNetwork(const NetworkConfig& cfg)
    : m_cfg(cfg),
      m_rng(cfg.seed),
      m_buffer(Endpoint::MaxDatagramSize(65536))
{
}

uint32_t
EngineNetwork::AddEndpoint(EndpointConfig cfg)
{
    uint32_t index = uint32_t(m_nodes.size());
    cfg.localIp = AddressOf(index);
    cfg.checkInvariants = cfg.checkInvariants || m_cfg.checkInvariants;
    // A test knob: every endpoint's pacer takes this slack (as on a HIL host), so that the
    // property tests also run the pacer's burst path (docs/engine.md).
    if (const char* slack = std::getenv("METAROCE_TEST_PACING_SLACK_US"); slack && *slack)
    {
        cfg.pacingSlack = MicroSeconds(std::strtoll(slack, nullptr, 10));
    }
    if (cfg.seed == 1)
    {
        cfg.seed = m_cfg.seed * 1000003 + index;
    }
    Node n;
    n.endpoint = std::make_unique<Endpoint>(cfg);
    m_nodes.push_back(std::move(n));
    return index;
}

std::pair<uint32_t, uint32_t>
EngineNetwork::Connect(uint32_t a, uint32_t b, const ConnectionConfig& cfg)
{
    uint32_t qa = 0;
    uint32_t qb = 0;
    At(a).CreateConnection(cfg, qa);
    At(b).CreateConnection(cfg, qb);
    At(a).Connect(qa, AddressOf(b), qb);
    At(b).Connect(qb, AddressOf(a), qa);
    return {qa, qb};
}

EngineNetwork::LinkState&
EngineNetwork::State(uint32_t src, uint32_t dst, int pathId)
{
    auto it = m_links.find({src, dst, pathId});
    if (it != m_links.end())
    {
        return it->second;
    }
    auto def = m_links.find({src, dst, -1});
    LinkState st;
    if (def != m_links.end())
    {
        st.cfg = def->second.cfg;
    }
    return m_links.emplace(std::make_tuple(src, dst, pathId), st).first->second;
}

LinkConfig&
EngineNetwork::Link(uint32_t src, uint32_t dst, int pathId)
{
    return State(src, dst, pathId).cfg;
}

void
EngineNetwork::Schedule(Time t, std::function<void()> run)
{
    m_events_q.push(Event{std::max(t, m_now), m_seq++, std::move(run)});
}

void
EngineNetwork::At(Time t, std::function<void()> action)
{
    Schedule(t, std::move(action));
}

void
EngineNetwork::Kick(uint32_t i)
{
    Pump(i);
}

void
EngineNetwork::Pump(uint32_t i)
{
    Node& n = m_nodes[i];
    Endpoint& ep = *n.endpoint;
    while (n.egressFree <= m_now)
    {
        TxDatagram tx;
        tx.buffer = m_buffer.data();
        tx.capacity = m_buffer.size();
        if (!ep.PollTransmit(m_now, tx))
        {
            break;
        }
        n.egressFree = m_now + TransmissionTime(tx.length + WIRE_OVERHEAD_BYTES, m_cfg.lineRateBps);
        Transmit(i, tx);
    }
    if (n.egressFree > m_now && !n.pullScheduled)
    {
        n.pullScheduled = true;
        Schedule(n.egressFree, [this, i]() {
            m_nodes[i].pullScheduled = false;
            Pump(i);
        });
    }
    Completion c;
    while (ep.PollCompletion(c))
    {
        n.completions.push_back(c);
        if (onCompletion)
        {
            onCompletion(i, c);
        }
    }
    if (m_cfg.checkInvariants && m_invariantFailure.empty())
    {
        std::string why = ep.CheckInvariants();
        if (!why.empty())
        {
            m_invariantFailure =
                "at " + std::to_string(m_now) + " ns, endpoint " + std::to_string(i) + ": " + why;
        }
    }
    Time t = ep.NextTimeout();
    if (t != TIME_INFINITE && t != n.timerAt)
    {
        n.timerAt = t;
        uint64_t gen = ++n.timerGen;
        Schedule(t, [this, i, gen]() {
            Node& node = m_nodes[i];
            if (gen != node.timerGen)
            {
                return;
            }
            node.timerAt = TIME_INFINITE;
            node.endpoint->HandleTimeout(m_now);
            Pump(i);
        });
    }
}

void
EngineNetwork::Transmit(uint32_t i, const TxDatagram& tx)
{
    uint32_t dst = IndexOf(tx.meta.dstIp);
    ParsedPacket pkt;
    bool parsed = ParseDatagram(tx.buffer, tx.length, pkt) == ParseStatus::OK;
    LinkState& link = State(i, dst, tx.pathId);
    const LinkConfig& cfg = link.cfg;
    WireInfo info{i,
                  dst,
                  tx.pathId,
                  parsed ? pkt.bth.opcode : uint8_t(0),
                  parsed ? pkt.bth.psn : 0,
                  false,
                  parsed ? &pkt : nullptr};
    bool drop = cfg.blackHole || dst >= m_nodes.size();
    if (!drop && cfg.loss > 0 && m_rng.Uniform() < cfg.loss)
    {
        drop = true;
    }
    if (!drop && cfg.burstStart > 0)
    {
        link.bad =
            link.bad ? (m_rng.Uniform() >= cfg.burstEnd) : (m_rng.Uniform() < cfg.burstStart);
        drop = link.bad && m_rng.Uniform() < cfg.burstLoss;
    }
    if (!drop && cfg.dropIf && parsed)
    {
        drop = cfg.dropIf(info);
    }
    if (m_logTx)
    {
        TxRecord r{m_now, i, tx.pathId, info.opcode, info.psn, 0, 0, tx.meta.srcPort, drop};
        if (parsed && (pkt.info->headers & HDR_MDH))
        {
            r.messageSeq = pkt.mdh.messageSeq;
            r.offset = pkt.mdh.offset;
        }
        m_txLog.push_back(r);
    }
    if (onTransmit)
    {
        onTransmit(m_now, i, tx, drop);
    }
    if (drop)
    {
        ++m_dropped;
        return;
    }
    DatagramMeta meta = tx.meta;
    if (meta.ecn != Ecn::NOT_ECT && cfg.ceMark > 0 && m_rng.Uniform() < cfg.ceMark)
    {
        meta.ecn = Ecn::CE;
    }
    int copies = (cfg.duplicate > 0 && m_rng.Uniform() < cfg.duplicate) ? 2 : 1;
    Time serialization = TransmissionTime(tx.length + WIRE_OVERHEAD_BYTES, m_cfg.lineRateBps);
    if (cfg.rateBps > 0)
    {
        // The path's own bottleneck (a slow or degraded route): FIFO at rateBps.
        Time start = std::max(m_now + serialization, link.free);
        link.free = start + TransmissionTime(tx.length + WIRE_OVERHEAD_BYTES, cfg.rateBps);
        serialization = link.free - m_now;
    }
    for (int k = 0; k < copies; ++k)
    {
        Time extra = (cfg.reorder > 0 && m_rng.Uniform() < cfg.reorder) ? cfg.reorderDelay : 0;
        std::vector<uint8_t> bytes(tx.buffer, tx.buffer + tx.length);
        Schedule(
            m_now + serialization + cfg.delay + extra + k,
            [this, dst, meta, b = std::move(bytes)]() mutable { Arrive(dst, meta, std::move(b)); });
    }
}

void
EngineNetwork::Arrive(uint32_t dst, DatagramMeta meta, std::vector<uint8_t> bytes)
{
    Node& n = m_nodes[dst];
    if (m_cfg.downlinkRateBps <= 0)
    {
        Deliver(dst, meta, bytes);
        return;
    }
    uint64_t size = bytes.size() + WIRE_OVERHEAD_BYTES;
    if (n.queueBytes + size > m_cfg.downlinkBufferBytes)
    {
        ++m_dropped;
        return;
    }
    if (m_cfg.ecnThresholdBytes > 0 && n.queueBytes > m_cfg.ecnThresholdBytes &&
        meta.ecn != Ecn::NOT_ECT)
    {
        meta.ecn = Ecn::CE;
    }
    n.queueBytes += size;
    n.peakQueue = std::max(n.peakQueue, n.queueBytes);
    Time start = std::max(m_now, n.ingressFree);
    n.ingressFree = start + TransmissionTime(size, m_cfg.downlinkRateBps);
    Schedule(n.ingressFree, [this, dst, meta, size, b = std::move(bytes)]() {
        m_nodes[dst].queueBytes -= size;
        Deliver(dst, meta, b);
    });
}

void
EngineNetwork::Deliver(uint32_t dst, const DatagramMeta& meta, const std::vector<uint8_t>& bytes)
{
    m_nodes[dst].endpoint->HandleDatagram(m_now, meta, bytes.data(), bytes.size());
    Pump(dst);
}

bool
EngineNetwork::RunUntil(Time t)
{
    while (!m_events_q.empty() && m_events_q.top().time <= t)
    {
        Event e = m_events_q.top();
        m_events_q.pop();
        m_now = e.time;
        ++m_events;
        e.run();
    }
    if (m_events_q.empty())
    {
        return true;
    }
    m_now = t;
    return false;
}

bool
EngineNetwork::RunUntilIdle(Time limit)
{
    return RunUntil(limit);
}

} // namespace test
} // namespace metaroce
