/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: the server's side of a session (Hello, the receives, every
 * message verified, the verdict).
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace perf
{

ServerSession::ServerSession(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel)
    : Session(app, shard, std::move(channel), false),
      m_finishTimer(*shard.io)
{
}

void
ServerSession::Start()
{
    StartChannel();
}

bool
ServerSession::OnRoleMessage(const proto::ControlMessage& msg)
{
    using M = proto::ControlMessage;
    if (msg.body_case() == M::kHello && m_state == State::HANDSHAKE)
    {
        OnHello(msg.hello());
        return true;
    }
    if (msg.body_case() == M::kFinish && m_state == State::RUNNING)
    {
        OnFinish(msg.finish());
        return true;
    }
    return false;
}

void
ServerSession::Reject(const std::string& reason)
{
    spdlog::error("rejected client {}: {}", m_name, reason);
    ++m_errors;
    m_firstError = reason;
    proto::ControlMessage msg;
    msg.mutable_reject()->set_reason(reason);
    m_channel->Send(msg);
    Finish(1);
}

void
ServerSession::OnHello(const proto::Hello& hello)
{
    // The settings must be ours: both ends of a perf test are configured alike.
    const proto::ConnectionSettings ours = SettingsOf(m_ccfg, m_opts.icrc);
    auto sameAsOurs = [&ours](const proto::ConnectionSettings& client, ConnectionConfig&) {
        const std::string diff = CompareSettings(ours, client, "server", "client");
        return diff.empty() ? diff : "connection settings differ: " + diff;
    };
    std::string why = CheckHello(hello, sameAsOurs, m_ccfg);
    if (why.empty())
    {
        why = SharedDataPort(hello.address());
    }
    if (!why.empty())
    {
        Reject(why);
        return;
    }
    const proto::Workload& w = hello.workload();
    m_workload = w;
    m_size = w.message_size();
    m_depth = w.depth();
    m_write = w.op() == "write";
    m_pattern = std::make_unique<DataPattern>(w.pattern_seed(), m_size);
    const uint32_t base = ShardSourcePortBase(m_opts.sourcePortBase ? m_opts.sourcePortBase
                                                                    : SERVER_SOURCE_PORT_BASE);
    if (base == 0)
    {
        Reject("server cannot set up the session: " + std::to_string(w.connections()) +
               " connections on shard " + std::to_string(m_shard.index) +
               " need more UDP source ports than there are above --sport-base");
        return;
    }
    uint32_t access = ACCESS_LOCAL_WRITE | (m_write ? uint32_t(ACCESS_REMOTE_WRITE) : 0u);
    if (!CreateConnections(m_ccfg.transport, uint16_t(base), why) || !AllocateBuffer(access, why))
    {
        Reject("server cannot set up the session: " + why);
        return;
    }
    why = ConnectTo(hello.address(), hello.queue_pairs());
    if (!why.empty())
    {
        Reject(why);
        return;
    }
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        for (uint64_t slot = 0; slot < m_depth; ++slot)
        {
            PostRecv(s, slot);
        }
    }
    m_channel->Send(
        AcceptMessage(SOFTWARE, OurDataAddress(), m_qpns, base, m_write ? &m_mr : nullptr));
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
    StartHostDelayExchange(); // only an accepted client's reports count
    spdlog::info("accepted client {} ({}): {} {} x {} bytes, {} connection(s), {} stream(s), "
                 "depth {}",
                 m_name,
                 hello.software(),
                 m_ccfg.transport,
                 w.op(),
                 m_size,
                 w.connections(),
                 w.streams(),
                 m_depth);
    m_host.Pump();
}

void
ServerSession::PostRecv(size_t streamIndex, uint64_t slot)
{
    const Stream& st = m_streams[streamIndex];
    RecvWr wr;
    wr.wrId = uint64_t(streamIndex) << WR_SEQ_BITS | slot;
    wr.sge.addr = reinterpret_cast<uint64_t>(Slot(streamIndex, slot));
    wr.sge.length = uint32_t(m_size);
    wr.sge.lkey = m_mr.lkey;
    wr.streamId = st.id;
    PostStatus ps = m_host.GetEndpoint().PostRecv(m_app.Clock().Now(), m_qpns[st.conn], wr);
    if (ps != PostStatus::OK)
    {
        VerifyFailed(std::string("PostRecv failed: ") + PostStatusName(ps));
    }
}

void
ServerSession::OnRoleCompletion(const Completion& c)
{
    auto idx = m_connIndex.find(c.connectionId);
    if (idx == m_connIndex.end() || c.streamId >= m_workload.streams())
    {
        VerifyFailed("completion for an unknown connection/stream");
        return;
    }
    size_t s = size_t(idx->second) * m_workload.streams() + c.streamId;
    Stream& st = m_streams[s];
    uint64_t seq = st.completed;
    uint64_t slot = seq % m_depth;
    ReceivedMessage m;
    m.write = m_write;
    m.size = m_size;
    m.seq = seq;
    m.slot = slot;
    m.got = Slot(s, slot);
    m.want = m_pattern->Message(st.conn, st.id, seq);
    std::string problem = CheckReceived(c, m);
    if (!problem.empty())
    {
        VerifyFailed("connection " + std::to_string(st.conn) + " stream " + std::to_string(st.id) +
                     " message " + std::to_string(seq) + ": " + problem);
    }
    ++st.completed;
    m_bytes += m_size;
    ++m_messages;
    PostRecv(s, slot);
    CheckDone();
}

void
ServerSession::OnFinish(const proto::Finish& finish)
{
    m_expected.assign(finish.messages_per_stream().begin(), finish.messages_per_stream().end());
    m_finishReceived = true;
    if (m_expected.size() != m_streams.size())
    {
        VerifyFailed("Finish lists " + std::to_string(m_expected.size()) + " streams, expected " +
                     std::to_string(m_streams.size()));
        SendVerdict();
        return;
    }
    CheckDone();
    if (m_state == State::RUNNING)
    {
        // Stragglers are in flight or lost for good: give them the timeout.
        std::weak_ptr<ServerSession> weak =
            std::static_pointer_cast<ServerSession>(shared_from_this());
        m_finishTimer.expires_after(std::chrono::milliseconds(int64_t(m_opts.timeout * 1000)));
        m_finishTimer.async_wait([weak](const boost::system::error_code& error) {
            auto self = weak.lock();
            if (!error && self && self->m_state == State::RUNNING)
            {
                self->VerifyFailed("messages missing at the receiver after the timeout");
                self->SendVerdict();
            }
        });
    }
}

void
ServerSession::CheckDone()
{
    if (!m_finishReceived || m_state != State::RUNNING)
    {
        return;
    }
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        if (m_streams[s].completed < m_expected[s])
        {
            return;
        }
    }
    SendVerdict();
}

void
ServerSession::SendVerdict()
{
    m_end = m_app.Clock().Now();
    for (size_t s = 0; s < m_streams.size() && s < m_expected.size(); ++s)
    {
        if (m_streams[s].completed != m_expected[s])
        {
            VerifyFailed("stream " + std::to_string(s) + ": received " +
                         std::to_string(m_streams[s].completed) + " messages, sender completed " +
                         std::to_string(m_expected[s]));
        }
    }
    proto::ControlMessage msg;
    proto::Verdict* v = msg.mutable_verdict();
    v->set_messages_verified(m_errors == 0 ? m_messages : 0);
    v->set_bytes_verified(m_errors == 0 ? m_bytes : 0);
    v->set_errors(m_errors);
    v->set_first_error(m_firstError);
    m_channel->Send(msg);
    Finish(m_errors == 0 ? 0 : 1);
}

void
ServerSession::DropUnauthenticated(const std::string& reason)
{
    if (!AwaitingHello())
    {
        return;
    }
    m_state = State::DONE;
    m_channel->Close(); // the descriptor is what the caller wants back, now
    m_app.NoteUnauthenticatedEnd(m_name, reason);
    m_app.SessionDone(this, -1);
}

void
ServerSession::StopRoleTimers()
{
    m_finishTimer.cancel();
}

} // namespace perf
} // namespace hil
} // namespace metaroce
