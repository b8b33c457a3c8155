/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "fuzz-harness.h"

#include "metaroce-icrc.h"
#include "metaroce-wire.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

namespace metaroce
{
namespace fuzz
{
namespace
{

/// Guard bytes before, between and after the regions (a multiple of ASan's 8-byte granule).
constexpr size_t GUARD = 64;
/// Region sizes in arena order.
constexpr size_t REGION_SIZES[4] = {Arena::SOURCE_SIZE,
                                    Arena::TARGET_SIZE,
                                    Arena::RECV_SLOT_SIZE* Arena::RECV_SLOTS,
                                    Arena::PROTECTED_SIZE};
/// Fill byte of the protected region.
constexpr uint8_t PROTECTED_FILL = 0xA5;
/// Message lengths of the sends, in turn: single- and multi-packet, one byte, a full receive.
constexpr uint32_t SEND_LENGTHS[] = {200, 700, 1, 1024, 300, 513, 64, 1000};
/// Far more datagrams than one pump can legitimately produce with this setup (at most 16
/// outstanding messages of at most 4 packets, and their ACKs): more means a transmit loop.
constexpr uint64_t MAX_DATAGRAMS_PER_PUMP = 4096;
/// Deadlines run after the last record, so that every input also reaches a timeout (each
/// costs a retransmitted window; FIRE_TIMER records reach the later ones).
constexpr int DRAIN_TIMEOUTS = 2;

/// Report a broken invariant and abort, so libFuzzer saves the input as a crash.
[[noreturn]] void
Fail(const char* what, uint64_t a = 0, uint64_t b = 0)
{
    std::fprintf(stderr,
                 "metaroce fuzz: invariant broken: %s (%" PRIu64 ", %" PRIu64 ")\n",
                 what,
                 a,
                 b);
    std::abort();
}

/// \return the contents of the source region (written once, compared after every input).
const std::vector<uint8_t>&
SourcePattern()
{
    static const std::vector<uint8_t> pattern = [] {
        std::vector<uint8_t> p(Arena::SOURCE_SIZE);
        for (size_t i = 0; i < p.size(); ++i)
        {
            p[i] = uint8_t(i * 7 + 1);
        }
        return p;
    }();
    return pattern;
}

/// The endpoint under test, its host's state and the fake clock.
class Host
{
  public:
    /// Set up the endpoint of \p kind and \p mode at time 0; count into \p stats if not null.
    Host(Kind kind, uint8_t mode, RunStats* stats)
        : m_kind(kind),
          m_endpoint(MakeEndpointConfig(kind, mode, LOCAL_IP)),
          m_buffer(Endpoint::MaxDatagramSize(MakeConnectionConfig(kind, mode).mtu)),
          m_stats(stats)
    {
        m_qpn = SetUpSide(m_endpoint, kind, mode, PEER_IP, m_arena, m_log);
        if (m_qpn == 0)
        {
            Fail("the fuzz setup did not create its connection", mode);
        }
        Pump();
    }

    /// Execute one record.
    void Step(uint8_t flags, uint16_t delta, const uint8_t* data, size_t length)
    {
        m_now += Time(delta) * TICK;
        RunDueTimers();
        if (flags & POST_RECV)
        {
            m_log.PostNextRecv(m_endpoint, m_now, m_qpn, m_kind, m_arena);
        }
        if (flags & POST_SEND)
        {
            m_log.PostNextSend(m_endpoint, m_now, m_qpn, m_kind, m_arena);
        }
        if (!(flags & NO_DATAGRAM))
        {
            Deliver(flags, data, length);
        }
        if (flags & FIRE_TIMER)
        {
            Time t = m_endpoint.NextTimeout();
            if (t != TIME_INFINITE)
            {
                m_now = std::max(m_now, t);
                m_endpoint.HandleTimeout(m_now);
            }
        }
        if (!(flags & NO_PUMP))
        {
            Pump();
        }
        if (m_stats != nullptr)
        {
            ++m_stats->records;
        }
    }

    /// Let the remaining deadlines fire, then check the memory.
    void Finish()
    {
        Pump();
        for (int i = 0; i < DRAIN_TIMEOUTS; ++i)
        {
            Time t = m_endpoint.NextTimeout();
            if (t == TIME_INFINITE)
            {
                break;
            }
            m_now = std::max(m_now, t);
            RunDueTimers();
        }
        if (!m_arena.ReadOnlyRegionsIntact())
        {
            Fail("the engine wrote into a region without write access");
        }
    }

  private:
    /// Hand \p length bytes at \p data to the endpoint as a datagram from the peer.
    void Deliver(uint8_t flags, const uint8_t* data, size_t length)
    {
        // An exact-size copy: reading past the datagram is then a heap overflow ASan reports.
        std::unique_ptr<uint8_t[]> bytes(new uint8_t[length]);
        if (length > 0)
        {
            std::memcpy(bytes.get(), data, length);
        }
        DatagramMeta meta;
        meta.srcIp = (flags & WRONG_SOURCE) ? PEER_IP ^ 0x100 : PEER_IP;
        meta.dstIp = LOCAL_IP;
        meta.srcPort = 0xC000;
        meta.ecn = (flags & CE) ? Ecn::CE : Ecn::ECT0;
        if (!(flags & KEEP_ICRC) && length >= ICRC_SIZE)
        {
            StoreIcrc(bytes.get() + length - ICRC_SIZE,
                      ComputeDatagramIcrc(meta, bytes.get(), length - ICRC_SIZE));
        }
        RxStatus status = m_endpoint.HandleDatagram(m_now, meta, bytes.get(), length);
        if (m_stats != nullptr)
        {
            ++m_stats->datagrams;
            m_stats->accepted += status == RxStatus::ACCEPTED;
        }
    }

    /// Run the deadlines due now, as a host's timer would, and pump after each round. A
    /// deadline that stays due means a host would spin on its timer.
    void RunDueTimers()
    {
        for (int round = 0; m_endpoint.NextTimeout() <= m_now; ++round)
        {
            if (round == 8)
            {
                Fail("HandleTimeout leaves a deadline due",
                     uint64_t(m_endpoint.NextTimeout()),
                     uint64_t(m_now));
            }
            m_endpoint.HandleTimeout(m_now);
            Pump();
        }
    }

    /// Poll transmit and completions, checking what comes out.
    void Pump()
    {
        uint64_t sent = 0;
        for (;;)
        {
            TxDatagram tx;
            tx.buffer = m_buffer.data();
            tx.capacity = m_buffer.size();
            if (!m_endpoint.PollTransmit(m_now, tx))
            {
                break;
            }
            if (++sent > MAX_DATAGRAMS_PER_PUMP)
            {
                Fail("PollTransmit does not stop", sent);
            }
            CheckTransmitted(tx);
        }
        Completion c;
        uint64_t completed = 0;
        while (m_endpoint.PollCompletion(c))
        {
            ++completed;
            if (c.connectionId != m_qpn)
            {
                Fail("completion of another connection", c.connectionId, m_qpn);
            }
            if (const char* why = m_log.Complete(c))
            {
                Fail(why, c.wrId, uint64_t(c.status));
            }
        }
        if (m_stats != nullptr)
        {
            m_stats->transmitted += sent;
            m_stats->completions += completed;
        }
    }

    /// Check a datagram the endpoint produced.
    void CheckTransmitted(const TxDatagram& tx) const
    {
        if (tx.length > tx.capacity || tx.buffer != m_buffer.data())
        {
            Fail("datagram longer than the buffer, or written elsewhere", tx.length, tx.capacity);
        }
        ParsedPacket pkt;
        ParseStatus ps = ParseDatagram(tx.buffer, tx.length, pkt);
        if (ps != ParseStatus::OK)
        {
            Fail("the endpoint sent a datagram that does not parse", uint64_t(ps), tx.length);
        }
        if (!CheckDatagramIcrc(tx.meta, tx.buffer, tx.length))
        {
            Fail("the endpoint sent a datagram with a wrong ICRC", pkt.bth.opcode);
        }
        if (tx.meta.srcIp != LOCAL_IP || tx.meta.dstIp != PEER_IP || tx.connectionId != m_qpn)
        {
            Fail("datagram with wrong addresses", tx.meta.dstIp, tx.connectionId);
        }
        if (pkt.bth.destQp != FIRST_QPN)
        {
            Fail("datagram for a QP other than the peer's", pkt.bth.destQp);
        }
    }

    Kind m_kind;                   //!< transport under test
    Time m_now{0};                 //!< the fake clock
    Arena m_arena;                 //!< registered memory (outlives the endpoint)
    WorkLog m_log;                 //!< outstanding work requests
    Endpoint m_endpoint;           //!< the endpoint under test
    uint32_t m_qpn{0};             //!< its connection
    std::vector<uint8_t> m_buffer; //!< transmit buffer
    RunStats* m_stats;             //!< counts, or nullptr
};

/// \return the little-endian 16-bit value at \p p.
uint16_t
ReadLe16(const uint8_t* p)
{
    return uint16_t(p[0] | (p[1] << 8));
}

} // namespace

const char*
KindName(Kind kind)
{
    return kind == Kind::METAROCE ? "metaroce" : "rocev2";
}

EndpointConfig
MakeEndpointConfig(Kind kind, uint8_t mode, uint32_t ip)
{
    EndpointConfig cfg;
    cfg.localIp = ip;
    // Not 1: the testbed replaces a seed of 1 with its own.
    cfg.seed = ip == LOCAL_IP ? 7 : 8;
    cfg.icrc = true;
    cfg.rateHint = !(kind == Kind::METAROCE && (mode & 0x10));
    return cfg;
}

ConnectionConfig
MakeConnectionConfig(Kind kind, uint8_t mode)
{
    ConnectionConfig cfg;
    cfg.transport = KindName(kind);
    // Small packets and few work requests: many packets per message, cheap executions.
    cfg.mtu = 256;
    cfg.maxMessageSize = 4096;
    cfg.maxOutstandingWrs = 16;
    cfg.maxPostedRecvs = 16;
    if (kind == Kind::METAROCE)
    {
        static constexpr uint32_t PATHS[] = {1, 2, 4, 8};
        cfg.numPaths = PATHS[mode & 3];
        cfg.congestionControl = (mode & 0x04) ? "dctcp" : "aimd";
        cfg.pathScheduler = (mode & 0x08) ? "single" : "spray";
        cfg.maxStreams = 4;
        // Short timers, so that a few records reach RTOs, path failure, probes and the
        // connection timeout.
        cfg.rtoInitial = MicroSeconds(50);
        cfg.rtoMin = MicroSeconds(20);
        cfg.rtoMax = MilliSeconds(1);
        cfg.probeInterval = MicroSeconds(20);
        cfg.connectionTimeout = MilliSeconds(2);
        cfg.rnrRetryDelay = MicroSeconds(5);
        cfg.rnrRetryLimit = 3;
    }
    else
    {
        ConnectionConfig::RoceV2Options& r = cfg.rocev2;
        r.recovery = (mode & 0x01) ? "irn" : "gbn";
        r.dcqcn = !(mode & 0x02);
        r.ackEveryPackets = (mode & 0x04) ? 1 : 4;
        r.maxInflightPackets = (mode & 0x08) ? 8 : 0;
        r.localAckTimeout = 3; // 32.8 us
        r.retryCount = 3;
        r.rnrRetry = 3;
        r.irnWindow = 64; // the bitmaps wrap often
        r.irnRtoLow = MicroSeconds(20);
        r.irnRtoHigh = MicroSeconds(60);
    }
    return cfg;
}

Arena::Arena()
{
    size_t total = GUARD;
    for (size_t size : REGION_SIZES)
    {
        total += size + GUARD;
    }
    m_bytes.assign(total, 0);
    std::memcpy(Region(0), SourcePattern().data(), SOURCE_SIZE);
    std::memset(Region(3), PROTECTED_FILL, PROTECTED_SIZE);
    for (size_t i = 0; i < 5; ++i)
    {
        ASAN_POISON_MEMORY_REGION(i == 0 ? m_bytes.data() : Region(i - 1) + REGION_SIZES[i - 1],
                                  GUARD);
    }
}

Arena::~Arena()
{
    ASAN_UNPOISON_MEMORY_REGION(m_bytes.data(), m_bytes.size());
}

uint8_t*
Arena::Region(size_t index) const
{
    size_t offset = GUARD;
    for (size_t i = 0; i < index; ++i)
    {
        offset += REGION_SIZES[i] + GUARD;
    }
    return const_cast<uint8_t*>(m_bytes.data()) + offset;
}

void
Arena::Register(Endpoint& ep)
{
    source = ep.RegisterMemory(Region(0), SOURCE_SIZE, 0, SOURCE_IOVA);
    target = ep.RegisterMemory(Region(1),
                               TARGET_SIZE,
                               ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE,
                               TARGET_IOVA);
    recv = ep.RegisterMemory(Region(2), REGION_SIZES[2], ACCESS_LOCAL_WRITE, RECV_IOVA);
    protectedRegion =
        ep.RegisterMemory(Region(3), PROTECTED_SIZE, ACCESS_REMOTE_READ, PROTECTED_IOVA);
}

bool
Arena::ReadOnlyRegionsIntact() const
{
    static const std::vector<uint8_t> protectedPattern(PROTECTED_SIZE, PROTECTED_FILL);
    return std::memcmp(Region(0), SourcePattern().data(), SOURCE_SIZE) == 0 &&
           std::memcmp(Region(3), protectedPattern.data(), PROTECTED_SIZE) == 0;
}

PostStatus
WorkLog::PostSendNumber(Endpoint& ep,
                        Time now,
                        uint32_t qpn,
                        Kind kind,
                        const Arena& arena,
                        uint32_t i)
{
    uint32_t length = SEND_LENGTHS[i % (sizeof(SEND_LENGTHS) / sizeof(SEND_LENGTHS[0]))];
    SendWr wr;
    wr.wrId = SEND_ID_BASE + i;
    wr.opcode = WrOpcode(i % 4);
    wr.sge = {arena.source.addr + (i * 389) % (Arena::SOURCE_SIZE - length + 1),
              length,
              arena.source.lkey};
    // The peer registered its regions in the same order, so its target has the same key.
    wr.remoteAddr = arena.target.addr + (i * 557) % (Arena::TARGET_SIZE - length + 1);
    wr.rkey = arena.target.rkey;
    wr.immData = 0xABC00000 + i;
    wr.streamId = kind == Kind::METAROCE ? uint16_t((i / 2) % 2) : 0;
    PostStatus st = ep.PostSend(now, qpn, wr);
    if (st == PostStatus::OK)
    {
        if (m_sendOpen.size() <= i)
        {
            m_sendOpen.resize(i + 1, false);
        }
        m_sendOpen[i] = true;
    }
    return st;
}

PostStatus
WorkLog::PostRecvNumber(Endpoint& ep,
                        Time now,
                        uint32_t qpn,
                        Kind kind,
                        const Arena& arena,
                        uint32_t i)
{
    RecvWr wr;
    wr.wrId = RECV_ID_BASE + i;
    wr.sge = {arena.recv.addr + (i % Arena::RECV_SLOTS) * Arena::RECV_SLOT_SIZE,
              Arena::RECV_SLOT_SIZE,
              arena.recv.lkey};
    wr.streamId = kind == Kind::METAROCE ? uint16_t(i % 2) : 0;
    PostStatus st = ep.PostRecv(now, qpn, wr);
    if (st == PostStatus::OK)
    {
        if (m_recvOpen.size() <= i)
        {
            m_recvOpen.resize(i + 1, false);
        }
        m_recvOpen[i] = true;
    }
    return st;
}

PostStatus
WorkLog::PostNextSend(Endpoint& ep, Time now, uint32_t qpn, Kind kind, const Arena& arena)
{
    return PostSendNumber(ep, now, qpn, kind, arena, m_nextSend++);
}

PostStatus
WorkLog::PostNextRecv(Endpoint& ep, Time now, uint32_t qpn, Kind kind, const Arena& arena)
{
    return PostRecvNumber(ep, now, qpn, kind, arena, m_nextRecv++);
}

const char*
WorkLog::Complete(const Completion& c)
{
    bool success = c.status == WcStatus::SUCCESS;
    if (c.wrId >= SEND_ID_BASE && c.wrId - SEND_ID_BASE < m_sendOpen.size())
    {
        size_t i = size_t(c.wrId - SEND_ID_BASE);
        if (!m_sendOpen[i])
        {
            return "second completion of a send";
        }
        if (success && c.opcode != WcOpcode::SEND && c.opcode != WcOpcode::RDMA_WRITE)
        {
            return "send completed with a receive opcode";
        }
        m_sendOpen[i] = false;
        return nullptr;
    }
    if (c.wrId >= RECV_ID_BASE && c.wrId - RECV_ID_BASE < m_recvOpen.size())
    {
        size_t i = size_t(c.wrId - RECV_ID_BASE);
        if (!m_recvOpen[i])
        {
            return "second completion of a receive";
        }
        if (success && c.opcode != WcOpcode::RECV && c.opcode != WcOpcode::RECV_RDMA_WITH_IMM)
        {
            return "receive completed with a send opcode";
        }
        if (success && c.opcode == WcOpcode::RECV && c.byteLen > Arena::RECV_SLOT_SIZE)
        {
            return "receive completed with more bytes than its buffer holds";
        }
        m_recvOpen[i] = false;
        return nullptr;
    }
    return "completion of a work request that was never posted";
}

uint32_t
SetUpSide(Endpoint& ep, Kind kind, uint8_t mode, uint32_t peerIp, Arena& arena, WorkLog& log)
{
    uint32_t qpn = 0;
    std::string why;
    if (ep.CreateConnection(MakeConnectionConfig(kind, mode), qpn, &why) != PostStatus::OK)
    {
        std::fprintf(stderr, "metaroce fuzz: CreateConnection: %s\n", why.c_str());
        return 0;
    }
    if (ep.Connect(qpn, peerIp, FIRST_QPN) != PostStatus::OK)
    {
        return 0;
    }
    arena.Register(ep);
    for (uint32_t i = 0; i < INITIAL_RECVS; ++i)
    {
        log.PostNextRecv(ep, 0, qpn, kind, arena);
    }
    for (uint32_t i = 0; i < INITIAL_SENDS; ++i)
    {
        log.PostNextSend(ep, 0, qpn, kind, arena);
    }
    return qpn;
}

void
AppendRecord(std::vector<uint8_t>& out,
             uint8_t flags,
             uint16_t delta,
             const uint8_t* data,
             size_t length)
{
    length = std::min(length, MAX_RECORD_LENGTH);
    out.push_back(flags);
    out.push_back(uint8_t(delta));
    out.push_back(uint8_t(delta >> 8));
    out.push_back(uint8_t(length));
    out.push_back(uint8_t(length >> 8));
    out.insert(out.end(), data, data + length);
}

void
RunInput(Kind kind, const uint8_t* data, size_t size, RunStats* stats)
{
    if (size == 0)
    {
        return;
    }
    Host host(kind, data[0], stats);
    size_t at = 1;
    while (size - at >= RECORD_HEADER_SIZE)
    {
        uint8_t flags = data[at];
        uint16_t delta = ReadLe16(data + at + 1);
        size_t length = (flags & NO_DATAGRAM) ? 0 : ReadLe16(data + at + 3);
        at += RECORD_HEADER_SIZE;
        length = std::min({length, size - at, MAX_RECORD_LENGTH});
        host.Step(flags, delta, data + at, length);
        at += length;
    }
    host.Finish();
}

} // namespace fuzz
} // namespace metaroce
