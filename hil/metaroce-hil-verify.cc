/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-verify.h"

#include "metaroce-random.h"

#include <cstring>

namespace metaroce
{
namespace hil
{
namespace
{

/// splitmix64 finaliser.
uint64_t
Mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

} // namespace

DataPattern::DataPattern(uint64_t seed, uint64_t size)
    : m_seed(seed),
      m_bytes(size + PATTERN_WINDOW + 8)
{
    Rng rng(seed);
    for (size_t i = 0; i + 8 <= m_bytes.size(); i += 8)
    {
        uint64_t v = rng.Next();
        std::memcpy(&m_bytes[i], &v, 8);
    }
}

const uint8_t*
DataPattern::Message(uint32_t conn, uint32_t stream, uint64_t seq) const
{
    uint64_t h = Mix(m_seed ^ Mix(uint64_t(conn) << 48 ^ uint64_t(stream) << 32) ^ Mix(seq));
    return m_bytes.data() + h % PATTERN_WINDOW;
}

uint64_t
RegionBytes(const proto::Workload& w)
{
    const uint64_t slots = uint64_t(w.connections()) * w.streams() * w.depth();
    if (slots != 0 && w.message_size() > MAX_REGION_BYTES)
    {
        return 0;
    }
    return slots * w.message_size(); // connections, streams and depth are 32-bit: no overflow
}

std::string
CheckWorkload(const proto::Hello& hello, const ConnectionConfig& cfg)
{
    const proto::Workload& w = hello.workload();
    if (w.op() != "write" && w.op() != "send")
    {
        return "unknown op '" + w.op() + "'";
    }
    if (w.message_size() == 0 || w.message_size() > cfg.maxMessageSize)
    {
        return "message size " + std::to_string(w.message_size()) + " outside 1.." +
               std::to_string(cfg.maxMessageSize);
    }
    if (w.connections() == 0 || w.connections() > MAX_PERF_CONNECTIONS ||
        int(w.connections()) != hello.queue_pairs_size())
    {
        return "bad connection count " + std::to_string(w.connections());
    }
    if (w.streams() == 0 || w.streams() > cfg.maxStreams ||
        (cfg.transport == "rocev2" && w.streams() != 1))
    {
        return "bad stream count " + std::to_string(w.streams());
    }
    if (w.depth() == 0 || uint64_t(w.depth()) * w.streams() > cfg.maxOutstandingWrs ||
        w.depth() > cfg.maxPostedRecvs)
    {
        return "depth " + std::to_string(w.depth()) + " x " + std::to_string(w.streams()) +
               " streams exceeds the work-request limits";
    }
    if (hello.address().ipv4() == 0)
    {
        return "client sent no data address";
    }
    return "";
}

std::string
CheckHello(const proto::Hello& hello, const SettingsRule& settle, ConnectionConfig& cfg)
{
    if (hello.protocol_version() != proto::VERSION_CURRENT)
    {
        return "protocol version mismatch: server speaks " +
               std::to_string(proto::VERSION_CURRENT) + ", client (" + hello.software() +
               ") speaks " + std::to_string(hello.protocol_version());
    }
    std::string why = settle(hello.settings(), cfg);
    if (!why.empty())
    {
        return why;
    }
    why = CheckWorkload(hello, cfg);
    const uint64_t bytes = RegionBytes(hello.workload());
    if (why.empty() && (bytes == 0 || bytes > MAX_REGION_BYTES))
    {
        why = "buffer of " + std::to_string(bytes) + " bytes exceeds the " +
              std::to_string(MAX_REGION_BYTES) + "-byte limit; lower --size, --depth or --streams";
    }
    return why.empty() ? "" : "workload not acceptable: " + why;
}

void
AddQueuePairs(const std::vector<uint32_t>& qpns,
              uint32_t sourcePortBase,
              google::protobuf::RepeatedPtrField<proto::QueuePair>& out)
{
    for (size_t i = 0; i < qpns.size(); ++i)
    {
        proto::QueuePair* qp = out.Add();
        qp->set_qpn(qpns[i]);
        qp->set_source_port_base(uint32_t(sourcePortBase + i * PORTS_PER_CONNECTION));
    }
}

proto::ControlMessage
AcceptMessage(const std::string& software,
              const proto::DataAddress& address,
              const std::vector<uint32_t>& qpns,
              uint32_t sourcePortBase,
              const MemoryRegion* region)
{
    proto::ControlMessage msg;
    proto::Accept* accept = msg.mutable_accept();
    accept->set_protocol_version(proto::VERSION_CURRENT);
    accept->set_software(software);
    *accept->mutable_address() = address;
    AddQueuePairs(qpns, sourcePortBase, *accept->mutable_queue_pairs());
    if (region)
    {
        accept->mutable_region()->set_addr(region->addr);
        accept->mutable_region()->set_length(region->length);
        accept->mutable_region()->set_rkey(region->rkey);
    }
    return msg;
}

std::string
CheckReceived(const Completion& c, const ReceivedMessage& m)
{
    std::string problem;
    if (m.write)
    {
        if (c.opcode != WcOpcode::RECV_RDMA_WITH_IMM || !c.hasImm)
        {
            problem = "expected a WRITE-with-immediate completion";
        }
        else if (c.immData != uint32_t(m.seq))
        {
            problem = "immediate " + std::to_string(c.immData) +
                      " names another message (out of order or lost)";
        }
    }
    else if (c.opcode != WcOpcode::RECV || c.byteLen != m.size)
    {
        problem = "receive completion of " + std::to_string(c.byteLen) + " bytes, expected " +
                  std::to_string(m.size);
    }
    else if ((c.wrId & WR_SEQ_MASK) != m.slot)
    {
        problem = "consumed receive slot " + std::to_string(c.wrId & WR_SEQ_MASK) + ", expected " +
                  std::to_string(m.slot);
    }
    if (!problem.empty())
    {
        return problem;
    }
    if (std::memcmp(m.got, m.want, m.size) != 0)
    {
        uint64_t at = 0;
        while (at < m.size && m.got[at] == m.want[at])
        {
            ++at;
        }
        return "data differs from byte " + std::to_string(at);
    }
    return "";
}

} // namespace hil
} // namespace metaroce
