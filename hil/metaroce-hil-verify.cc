/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-verify.h"

#include "metaroce-random.h"

#include <algorithm>
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

// ---------------------------------------------------------------------------------------------
// VerifyingReceiver
// ---------------------------------------------------------------------------------------------

VerifyingReceiver::VerifyingReceiver(ReceiveEngine& engine, Layout layout, ErrorHandler onError)
    : m_engine(engine),
      m_layout(std::move(layout)),
      m_onError(std::move(onError)),
      m_pattern(m_layout.patternSeed, m_layout.size),
      m_completed(m_layout.qpns.size() * m_layout.streamsPerConnection, 0)
{
}

void
VerifyingReceiver::PostAll()
{
    for (size_t s = 0; s < m_completed.size(); ++s)
    {
        for (uint64_t slot = 0; slot < m_layout.depth; ++slot)
        {
            PostRecv(s, slot);
        }
    }
}

void
VerifyingReceiver::PostRecv(size_t stream, uint64_t slot)
{
    RecvWr wr;
    wr.wrId = uint64_t(stream) << WR_SEQ_BITS | slot;
    wr.sge.addr = reinterpret_cast<uint64_t>(Slot(stream, slot));
    wr.sge.length = uint32_t(m_layout.size);
    wr.sge.lkey = m_layout.lkey;
    wr.streamId = uint16_t(stream % m_layout.streamsPerConnection);
    const uint32_t qpn = m_layout.qpns[stream / m_layout.streamsPerConnection];
    const PostStatus st = m_engine.PostRecv(qpn, wr);
    if (st != PostStatus::OK)
    {
        Error(std::string("PostRecv failed: ") + PostStatusName(st));
    }
}

void
VerifyingReceiver::Error(const std::string& what)
{
    if (m_errors++ == 0)
    {
        m_firstError = what;
    }
    if (m_onError)
    {
        m_onError(what);
    }
}

bool
VerifyingReceiver::OnCompletion(const Completion& c)
{
    const auto conn = std::find(m_layout.qpns.begin(), m_layout.qpns.end(), c.connectionId);
    if (conn == m_layout.qpns.end())
    {
        return false;
    }
    const uint32_t index = uint32_t(conn - m_layout.qpns.begin());
    if (c.streamId >= m_layout.streamsPerConnection)
    {
        Error("completion for an unknown stream " + std::to_string(c.streamId) + " of connection " +
              std::to_string(index));
        return true;
    }
    const size_t s = size_t(index) * m_layout.streamsPerConnection + c.streamId;
    ReceivedMessage m;
    m.write = m_layout.write;
    m.size = m_layout.size;
    m.seq = m_completed[s];
    m.slot = m.seq % m_layout.depth;
    m.got = Slot(s, m.slot);
    m.want = m_pattern.Message(index, c.streamId, m.seq);
    const std::string problem = CheckReceived(c, m);
    if (!problem.empty())
    {
        Error("connection " + std::to_string(index) + " stream " + std::to_string(c.streamId) +
              " message " + std::to_string(m.seq) + ": " + problem);
    }
    ++m_completed[s];
    ++m_messages;
    m_bytes += m_layout.size;
    PostRecv(s, m.slot);
    return true;
}

void
VerifyingReceiver::OnFinish(const std::vector<uint64_t>& expected)
{
    m_finishReceived = true;
    m_expected = expected;
    if (m_expected.size() != m_completed.size())
    {
        Error("Finish lists " + std::to_string(m_expected.size()) + " streams, expected " +
              std::to_string(m_completed.size()));
    }
}

void
VerifyingReceiver::OnFinish(const proto::Finish& finish)
{
    OnFinish(std::vector<uint64_t>(finish.messages_per_stream().begin(),
                                   finish.messages_per_stream().end()));
}

void
VerifyingReceiver::StragglersTimedOut()
{
    Error("messages missing at the receiver after the timeout");
}

bool
VerifyingReceiver::Complete() const
{
    if (!m_finishReceived)
    {
        return false;
    }
    if (m_expected.size() != m_completed.size())
    {
        return true; // nothing more to wait for: the verdict says why
    }
    for (size_t s = 0; s < m_completed.size(); ++s)
    {
        if (m_completed[s] < m_expected[s])
        {
            return false;
        }
    }
    return true;
}

proto::Verdict
VerifyingReceiver::MakeVerdict()
{
    for (size_t s = 0; s < m_completed.size() && s < m_expected.size(); ++s)
    {
        if (m_completed[s] != m_expected[s])
        {
            Error("stream " + std::to_string(s) + ": received " + std::to_string(m_completed[s]) +
                  " messages, sender completed " + std::to_string(m_expected[s]));
        }
    }
    proto::Verdict v;
    const bool pass = m_errors == 0;
    v.set_messages_verified(pass ? m_messages : 0);
    v.set_bytes_verified(pass ? m_bytes : 0);
    v.set_errors(m_errors);
    v.set_first_error(m_firstError);
    return v;
}

std::string
SetUpServerSide(ServerEngine& engine,
                const proto::Hello& hello,
                const ConnectionConfig& cfg,
                uint32_t sourcePortBase,
                std::vector<uint8_t>& buffer,
                VerifyingReceiver::ErrorHandler onError,
                ServerSide& side)
{
    const proto::Workload& w = hello.workload();
    if (uint64_t(hello.queue_pairs_size()) != w.connections())
    {
        return "the Hello lists " + std::to_string(hello.queue_pairs_size()) + " queue pairs for " +
               std::to_string(w.connections()) + " connections";
    }
    for (uint32_t i = 0; i < w.connections(); ++i)
    {
        ConnectionConfig c = cfg;
        c.sourcePortBase = uint16_t(sourcePortBase + i * PORTS_PER_CONNECTION);
        uint32_t qpn = 0;
        std::string why;
        PostStatus st = engine.CreateConnection(c, qpn, &why);
        if (st != PostStatus::OK)
        {
            return "cannot create connection " + std::to_string(i) + ": " + PostStatusName(st) +
                   (why.empty() ? "" : " (" + why + ")");
        }
        side.qpns.push_back(qpn);
        st = engine.Connect(qpn, hello.address().ipv4(), hello.queue_pairs(int(i)).qpn());
        if (st != PostStatus::OK)
        {
            return std::string("cannot connect: ") + PostStatusName(st);
        }
    }
    const bool write = w.op() == "write";
    const uint64_t bytes = RegionBytes(w);
    if (buffer.size() != bytes)
    {
        return "the receive region has " + std::to_string(buffer.size()) + " bytes, not " +
               std::to_string(bytes);
    }
    const uint32_t access = ACCESS_LOCAL_WRITE | (write ? uint32_t(ACCESS_REMOTE_WRITE) : 0u);
    side.mr = engine.RegisterMemory(buffer.data(), bytes, access);
    if (side.mr.lkey == 0)
    {
        return "cannot register a " + std::to_string(bytes) + "-byte memory region";
    }
    VerifyingReceiver::Layout layout;
    layout.write = write;
    layout.size = w.message_size();
    layout.depth = w.depth();
    layout.streamsPerConnection = w.streams();
    layout.qpns = side.qpns;
    layout.buffer = buffer.data();
    layout.lkey = side.mr.lkey;
    layout.patternSeed = w.pattern_seed();
    side.receiver = std::make_unique<VerifyingReceiver>(engine, layout, std::move(onError));
    side.receiver->PostAll();
    return "";
}

} // namespace hil
} // namespace metaroce
