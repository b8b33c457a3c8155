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
    const uint32_t base = ShardSourcePortBase(m_opts.sourcePortBase ? m_opts.sourcePortBase
                                                                    : SERVER_SOURCE_PORT_BASE);
    if (base == 0)
    {
        Reject("server cannot set up the session: " + std::to_string(w.connections()) +
               " connections on shard " + std::to_string(m_shard.index) +
               " need more UDP source ports than there are above --sport-base");
        return;
    }
    // The server's side, made as every server makes it (SetUpServerSide()) through this
    // session's engine; what is made is torn down with the session (Teardown()).
    PrepareConnections(m_ccfg.transport);
    m_buffer.assign(RegionBytes(w), 0); // (CheckHello() bounded it)
    ServerSide side;
    ServerEngine& engine = *this;
    why = SetUpServerSide(
        engine,
        hello,
        m_ccfg,
        base,
        m_buffer,
        [this](const std::string& what) { VerifyFailed(what); },
        side);
    m_mr = side.mr;
    m_receiver = std::move(side.receiver);
    if (!why.empty())
    {
        Reject("server cannot set up the session: " + why);
        return;
    }
    LearnPeerAddress(hello.address());
    m_channel->Send(
        AcceptMessage(SOFTWARE, OurDataAddress(), m_qpns, base, m_write ? &m_mr : nullptr));
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
    m_app.ExpectSessions(hello.parallel_sessions()); // a one-shot server serves them all
    StartHostDelayExchange();                        // only an accepted client's reports count
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

PostStatus
ServerSession::CreateConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why)
{
    return AddConnection(cfg, qpn, why);
}

PostStatus
ServerSession::Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn)
{
    return m_host.GetEndpoint().Connect(qpn, peerIp, peerQpn);
}

MemoryRegion
ServerSession::RegisterMemory(uint8_t* base, uint64_t length, uint32_t access)
{
    return m_host.GetEndpoint().RegisterMemory(base, length, access);
}

PostStatus
ServerSession::PostRecv(uint32_t qpn, const RecvWr& wr)
{
    return m_host.GetEndpoint().PostRecv(m_app.Clock().Now(), qpn, wr);
}

void
ServerSession::OnRoleCompletion(const Completion& c)
{
    if (!m_receiver || !m_receiver->OnCompletion(c))
    {
        VerifyFailed("completion for an unknown connection " + std::to_string(c.connectionId));
        return;
    }
    m_bytes = m_receiver->Bytes();
    m_messages = m_receiver->Messages();
    CheckDone();
}

void
ServerSession::OnFinish(const proto::Finish& finish)
{
    m_finishReceived = true;
    if (!m_receiver)
    {
        return; // (Finish is accepted only while running, after the receiver exists)
    }
    m_receiver->OnFinish(finish);
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
                self->m_receiver->StragglersTimedOut();
                self->SendVerdict();
            }
        });
    }
}

void
ServerSession::CheckDone()
{
    if (m_state == State::RUNNING && m_receiver && m_receiver->Complete())
    {
        SendVerdict();
    }
}

void
ServerSession::SendVerdict()
{
    m_end = m_app.Clock().Now();
    proto::ControlMessage msg;
    *msg.mutable_verdict() = m_receiver->MakeVerdict();
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
