/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf: the client's side of a session (Hello, posting the messages, Finish, the
 * receiver's verdict).
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace perf
{

ClientSession::ClientSession(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel)
    : Session(app, shard, std::move(channel), true)
{
}

void
ClientSession::Start()
{
    m_workload.set_op(m_opts.op);
    m_workload.set_message_size(m_opts.size);
    m_workload.set_connections(m_opts.qps);
    m_workload.set_streams(m_opts.streams);
    m_workload.set_depth(m_opts.depth);
    m_workload.set_pattern_seed(m_opts.seed);
    m_size = m_opts.size;
    m_depth = m_opts.depth;
    m_write = m_opts.op == "write";
    m_pattern = std::make_unique<DataPattern>(m_opts.seed, m_size);
    std::string why;
    // (ParsePerfOptions() checked that every shard's ports fit.)
    const uint16_t base = uint16_t(ShardSourcePortBase(
        m_opts.sourcePortBase ? m_opts.sourcePortBase : CLIENT_SOURCE_PORT_BASE));
    if (!CreateConnections(m_opts.transport, base, why))
    {
        Abort(why, 1);
        return;
    }
    // Messages go out straight from the pattern, as perftest sends from its buffer: no copy of
    // every message into a slot first. Registered without write access: the engine only reads
    // it, and the pattern never changes.
    m_patternMr = m_host.GetEndpoint().RegisterMemory(const_cast<uint8_t*>(m_pattern->Data()),
                                                      m_pattern->Size(),
                                                      0);
    if (m_patternMr.lkey == 0)
    {
        Abort("cannot register the " + std::to_string(m_pattern->Size()) + "-byte data pattern", 1);
        return;
    }
    StartChannel();
    StartHostDelayExchange(); // the server takes it only once it accepted us
    proto::ControlMessage msg;
    proto::Hello* hello = msg.mutable_hello();
    hello->set_protocol_version(proto::VERSION_CURRENT);
    hello->set_software(SOFTWARE);
    *hello->mutable_settings() = SettingsOf(m_ccfg, m_opts.icrc);
    *hello->mutable_workload() = m_workload;
    hello->set_parallel_sessions(std::max<uint32_t>(m_opts.threads, 1));
    *hello->mutable_address() = OurDataAddress();
    AddQueuePairs(m_qpns, base, *hello->mutable_queue_pairs());
    m_channel->Send(msg);
    spdlog::info("connected to {}; sent Hello ({} {} x {} bytes, {} connection(s), {} "
                 "stream(s), {} path(s))",
                 m_name,
                 m_opts.transport,
                 m_opts.op,
                 m_size,
                 m_opts.qps,
                 m_opts.streams,
                 m_opts.transport == "rocev2" ? 1 : m_opts.paths);
}

bool
ClientSession::OnRoleMessage(const proto::ControlMessage& msg)
{
    using M = proto::ControlMessage;
    if (msg.body_case() == M::kAccept && m_state == State::HANDSHAKE)
    {
        OnAccept(msg.accept());
        return true;
    }
    if (msg.body_case() == M::kVerdict && m_state == State::FINISHING)
    {
        OnVerdict(msg.verdict());
        return true;
    }
    return false;
}

void
ClientSession::OnAccept(const proto::Accept& accept)
{
    if (accept.protocol_version() != proto::VERSION_CURRENT)
    {
        Abort("protocol version mismatch: client speaks " + std::to_string(proto::VERSION_CURRENT) +
                  ", server speaks " + std::to_string(accept.protocol_version()),
              1);
        return;
    }
    if (accept.queue_pairs_size() != int(m_qpns.size()))
    {
        Abort("server answered with " + std::to_string(accept.queue_pairs_size()) +
                  " connections, expected " + std::to_string(m_qpns.size()),
              1);
        return;
    }
    uint64_t needed = uint64_t(m_streams.size()) * m_depth * m_size;
    if (m_write && (!accept.has_region() || accept.region().length() < needed))
    {
        Abort("server's memory region is too small: " + std::to_string(accept.region().length()) +
                  " bytes, need " + std::to_string(needed),
              1);
        return;
    }
    if (const std::string why = SharedDataPort(accept.address()); !why.empty())
    {
        Abort(why, 1);
        return;
    }
    m_remote = accept.region();
    if (const std::string why = ConnectTo(accept.address(), accept.queue_pairs()); !why.empty())
    {
        Abort(why, 1);
        return;
    }
    const uint32_t peerIp = accept.address().ipv4();
    spdlog::info("server {} ({}) accepted; data to {}:{}",
                 m_name,
                 accept.software(),
                 Ipv4ToString(peerIp),
                 accept.address().data_port());
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
    PostMore();
    m_host.Pump();
}

bool
ClientSession::MayPost(Time now) const
{
    if (m_state != State::RUNNING || m_interrupted)
    {
        return false;
    }
    if (m_opts.duration > 0)
    {
        return now - m_start < Time(m_opts.duration * 1e12);
    }
    return true;
}

void
ClientSession::PostMore()
{
    Time now = m_app.Clock().Now();
    if (!MayPost(now))
    {
        return;
    }
    Endpoint& ep = m_host.GetEndpoint();
    bool itersMode = m_opts.duration <= 0;
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        Stream& st = m_streams[s];
        while (st.posted - st.completed < m_depth && (!itersMode || st.posted < m_opts.iters))
        {
            uint64_t seq = st.posted;
            uint64_t slot = seq % m_depth;
            SendWr wr;
            wr.wrId = uint64_t(s) << WR_SEQ_BITS | (seq & WR_SEQ_MASK);
            wr.opcode = m_write ? WrOpcode::RDMA_WRITE_WITH_IMM : WrOpcode::SEND;
            wr.sge.addr = reinterpret_cast<uint64_t>(m_pattern->Message(st.conn, st.id, seq));
            wr.sge.length = uint32_t(m_size);
            wr.sge.lkey = m_patternMr.lkey;
            wr.remoteAddr = m_remote.addr() + (s * m_depth + slot) * m_size;
            wr.rkey = m_remote.rkey();
            wr.immData = uint32_t(seq);
            wr.streamId = st.id;
            PostStatus ps = ep.PostSend(now, m_qpns[st.conn], wr);
            if (ps == PostStatus::QUEUE_FULL)
            {
                break;
            }
            if (ps != PostStatus::OK)
            {
                Abort(std::string("PostSend failed: ") + PostStatusName(ps), 1);
                return;
            }
            ++st.posted;
        }
    }
}

void
ClientSession::OnRoleCompletion(const Completion& c)
{
    size_t s = size_t(c.wrId >> WR_SEQ_BITS);
    uint64_t seq = c.wrId & WR_SEQ_MASK;
    if (s >= m_streams.size())
    {
        return;
    }
    Stream& st = m_streams[s];
    if (seq != (st.completed & WR_SEQ_MASK))
    {
        VerifyFailed("stream " + std::to_string(s) + ": send completion of message " +
                     std::to_string(seq) + " out of order (expected " +
                     std::to_string(st.completed) + ")");
    }
    ++st.completed;
    m_bytes += m_size;
    ++m_messages;
    PostMore();
    CheckDone(m_app.Clock().Now());
}

void
ClientSession::CheckDone(Time now)
{
    if (m_state != State::RUNNING)
    {
        return;
    }
    bool itersMode = m_opts.duration <= 0;
    for (const Stream& st : m_streams)
    {
        if (st.completed != st.posted || (itersMode && !m_interrupted && st.posted < m_opts.iters))
        {
            return;
        }
    }
    if (!itersMode && MayPost(now))
    {
        return;
    }
    m_end = now;
    m_state = State::FINISHING;
    proto::ControlMessage msg;
    proto::Finish* finish = msg.mutable_finish();
    for (const Stream& st : m_streams)
    {
        finish->add_messages_per_stream(st.completed);
    }
    finish->set_bytes(m_bytes);
    m_channel->Send(msg);
}

void
ClientSession::OnVerdict(const proto::Verdict& verdict)
{
    m_verdict = verdict;
    m_verdictReceived = true;
    if (verdict.errors() > 0)
    {
        VerifyFailed("receiver: " + verdict.first_error());
    }
    else if (verdict.messages_verified() != m_messages)
    {
        VerifyFailed("receiver verified " + std::to_string(verdict.messages_verified()) +
                     " messages, sender completed " + std::to_string(m_messages));
    }
    Finish(m_errors == 0 ? 0 : 1);
}

void
ClientSession::BeforeReport(Time now)
{
    CheckDone(now);
}

} // namespace perf
} // namespace hil
} // namespace metaroce
