/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-udp-port.h"

#include "metaroce-endpoint.h"
#include "metaroce-icrc.h"
#include "metaroce-wire.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// Datagrams read per wake-up.
constexpr unsigned RX_BATCH = 32;
/// Receive buffer per datagram: the largest UDP payload.
constexpr size_t RX_SLOT = 65536;
/// Largest datagram Send() queues (an engine MTU of 9000 fits); larger ones go out at once.
constexpr size_t TX_SLOT = 9216;

/**
 * Create a UDP socket bound to \p ip:\p port (in a SO_REUSEPORT group if \p reusePort).
 * \return the fd, or -1 with \p error set.
 */
int
OpenUdpSocket(uint32_t ip,
              uint16_t port,
              int bufferBytes,
              bool receive,
              std::string& error,
              bool reusePort = false)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        error = std::string("socket(AF_INET, SOCK_DGRAM): ") + std::strerror(errno);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reusePort && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
    {
        error = std::string("SO_REUSEPORT: ") + std::strerror(errno);
        close(fd);
        return -1;
    }
    if (!receive)
    {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
    }
    int pmtu = IP_PMTUDISC_DO; // never fragment: a datagram is one frame, as on a RoCE NIC
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
    if (receive)
    {
        // Past net.core.rmem_max only with CAP_NET_ADMIN; without it, as much as it allows.
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufferBytes, sizeof(bufferBytes)) != 0)
        {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
        }
        int granted = 0;
        socklen_t grantedLen = sizeof(granted);
        // (The kernel reports twice the request, its accounting of buffer overhead, and caps a
        // request at INT_MAX / 2.)
        if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &grantedLen) == 0 &&
            granted / 2 < std::min(bufferBytes, INT_MAX / 2))
        {
            spdlog::info("udp port: receive buffer {} KiB of the {} KiB asked (raise "
                         "net.core.rmem_max, or run with CAP_NET_ADMIN): a burst larger than it "
                         "is dropped by the kernel and counted as rx_kernel_drops",
                         granted / 2 / 1024,
                         bufferBytes / 1024);
        }
        setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
        // The kernel's count of datagrams dropped on this socket (a full buffer) comes with
        // each datagram.
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(ip);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        error =
            "bind(" + Ipv4ToString(ip) + ":" + std::to_string(port) + "): " + std::strerror(errno);
        close(fd);
        return -1;
    }
    return fd;
}

} // namespace

std::string
AttachQpnSteering(int fd, uint32_t shards)
{
    // The program sees the UDP payload, which starts with the BTH (loads are big-endian).
    sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, Bth::DEST_QP), // A = QPN bits 23-16
        BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 16),
        BPF_STMT(BPF_MISC | BPF_TAX, 0),                      // X = A
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, Bth::DEST_QP + 1), // A = QPN bits 15-0
        BPF_STMT(BPF_ALU | BPF_OR | BPF_X, 0),
        BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, FIRST_QPN),
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, shards),
        BPF_STMT(BPF_RET | BPF_A, 0),
    };
    // (A datagram shorter than 8 bytes makes a load fail: the program returns 0, shard 0. One
    // of 8 to 11 bytes is steered by the bytes it holds. Either way its engine counts it as
    // malformed.)
    sock_fprog prog{};
    prog.len = uint16_t(sizeof(code) / sizeof(code[0]));
    prog.filter = code;
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) != 0)
    {
        return std::string("SO_ATTACH_REUSEPORT_CBPF: ") + std::strerror(errno);
    }
    return "";
}

std::unique_ptr<UdpFramePort>
UdpFramePort::Open(boost::asio::io_context& io,
                   const HostClock& clock,
                   const UdpPortConfig& cfg,
                   std::string& error)
{
    if (cfg.localIp == 0)
    {
        error = "UDP port: the local IPv4 address is not known";
        return nullptr;
    }
    const bool group = cfg.shards > 1;
    if (group && cfg.shardIndex >= cfg.shards)
    {
        error = "UDP port: shard " + std::to_string(cfg.shardIndex) + " of " +
                std::to_string(cfg.shards);
        return nullptr;
    }
    if (group && cfg.shardIndex == 0)
    {
        // A SO_REUSEPORT group takes in any socket of the same user that asks: make sure no
        // other program holds the port first, or the two would share its datagrams silently.
        // (A plain bind, without SO_REUSEADDR, fails on a port that any socket holds.)
        int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in any{};
        any.sin_family = AF_INET;
        any.sin_port = htons(cfg.dataPort);
        if (probe < 0 || bind(probe, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0)
        {
            error = "UDP data port " + std::to_string(cfg.dataPort) +
                    " is in use: " + std::strerror(errno);
            if (probe >= 0)
            {
                close(probe);
            }
            return nullptr;
        }
        close(probe);
    }
    // Receive on any address so that datagrams to other local addresses are seen (and
    // counted as not ours) instead of drawing ICMP errors.
    int fd = OpenUdpSocket(0, cfg.dataPort, cfg.receiveBufferBytes, true, error, group);
    if (fd < 0)
    {
        return nullptr;
    }
    if (group && cfg.shardIndex == 0)
    {
        // The group's program: until the other shards bind, it names sockets that do not
        // exist yet, and the kernel falls back to its own hash (no datagram is due yet).
        error = AttachQpnSteering(fd, cfg.shards);
        if (!error.empty())
        {
            close(fd);
            return nullptr;
        }
    }
    return std::unique_ptr<UdpFramePort>(new UdpFramePort(io, clock, cfg, fd));
}

UdpFramePort::UdpFramePort(boost::asio::io_context& io,
                           const HostClock& clock,
                           const UdpPortConfig& cfg,
                           int fd)
    : m_io(io),
      m_clock(clock),
      m_cfg(cfg),
      m_rx(io, fd),
      m_rxBuffers(RX_BATCH * RX_SLOT),
      m_batch(std::max<uint32_t>(cfg.txBatch, 1), TX_SLOT),
      m_backlogEcn(cfg.backlogEcn)
{
    if (cfg.gso)
    {
        // Receive trains of datagrams as one (split again in ReceiveNow()); send equal-sized
        // datagrams as one message per train (TxBatch::SetGso()).
        int one = 1;
        if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) != 0)
        {
            spdlog::warn("udp port: UDP_GRO: {}; receiving datagram by datagram",
                         std::strerror(errno));
        }
        m_batch.SetGso(true);
    }
    if (cfg.busyPollUs > 0)
    {
        int us = int(cfg.busyPollUs);
        if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) != 0)
        {
            spdlog::warn("udp port: SO_BUSY_POLL {} us: {} (needs CAP_NET_ADMIN above "
                         "net.core.busy_read); receiving without it",
                         us,
                         std::strerror(errno));
        }
    }
}

UdpFramePort::~UdpFramePort()
{
    Close();
}

void
UdpFramePort::LearnPeer(uint32_t ip, const MacAddress& /*mac*/, uint16_t dataPort, bool takesTrains)
{
    if (dataPort != 0)
    {
        m_peerPorts[ip] = dataPort;
    }
    if (takesTrains)
    {
        m_noTrains.erase(ip);
    }
    else
    {
        m_noTrains.insert(ip);
    }
}

void
UdpFramePort::Start(ReceiveHandler onDatagram, BatchHandler onBatch)
{
    m_onDatagram = std::move(onDatagram);
    m_onBatch = std::move(onBatch);
    DoReceive();
}

void
UdpFramePort::DoReceive()
{
    if (m_closed)
    {
        return;
    }
    m_rx.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& error) { OnReceive(error); });
}

void
UdpFramePort::OnReceive(const boost::system::error_code& error)
{
    if (error)
    {
        if (error != boost::asio::error::operation_aborted)
        {
            spdlog::error("udp port: receive wait failed: {}", error.message());
        }
        return;
    }
    ReceiveNow(4);
    DoReceive();
}

void
UdpFramePort::PollReceive()
{
    if (!m_closed && m_onDatagram)
    {
        ReceiveNow(1);
    }
}

void
UdpFramePort::ReceiveNow(int maxRounds)
{
    mmsghdr msgs[RX_BATCH];
    iovec iov[RX_BATCH];
    sockaddr_in from[RX_BATCH];
    alignas(cmsghdr) uint8_t control[RX_BATCH][128];
    for (unsigned i = 0; i < RX_BATCH; ++i)
    {
        iov[i].iov_base = m_rxBuffers.data() + i * RX_SLOT;
        iov[i].iov_len = RX_SLOT;
        std::memset(&msgs[i].msg_hdr, 0, sizeof(msghdr));
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = control[i];
        msgs[i].msg_hdr.msg_controllen = sizeof(control[i]);
    }
    // Up to a few batches per wake-up, then let other handlers (timers, control) run.
    for (int round = 0; round < maxRounds && !m_closed; ++round)
    {
        int n = recvmmsg(m_rx.native_handle(), msgs, RX_BATCH, MSG_DONTWAIT, nullptr);
        if (n <= 0)
        {
            m_backlogEcn.OnQueueEmpty();
            break;
        }
        for (int i = 0; i < n; ++i)
        {
            msghdr& h = msgs[i].msg_hdr;
            size_t len = msgs[i].msg_len;
            if ((h.msg_flags & MSG_TRUNC) || h.msg_namelen < sizeof(sockaddr_in))
            {
                ++m_counters.rxMalformed;
            }
            else
            {
                DatagramMeta meta;
                meta.srcIp = ntohl(from[i].sin_addr.s_addr);
                meta.srcPort = ntohs(from[i].sin_port);
                meta.dstIp = m_cfg.localIp;
                // The engine sees the RoCE port whatever port we listen on: the sender's ICRC
                // covers a UDP header with destination port 4791.
                meta.dstPort = ROCE_UDP_PORT;
                size_t segment = len; // UDP GRO: a train of datagrams of this size
                for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
                {
                    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                    {
                        uint32_t dropped = 0;
                        std::memcpy(&dropped, CMSG_DATA(c), sizeof(dropped));
                        m_counters.rxKernelDrops = dropped; // cumulative for the socket
                    }
                    else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO)
                    {
                        int size = 0;
                        std::memcpy(&size, CMSG_DATA(c), sizeof(size));
                        segment = size > 0 ? size_t(size) : len;
                    }
                    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
                    {
                        in_pktinfo info;
                        std::memcpy(&info, CMSG_DATA(c), sizeof(info));
                        meta.dstIp = ntohl(info.ipi_addr.s_addr);
                    }
                    else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
                    {
                        uint8_t tos = *CMSG_DATA(c);
                        meta.ecn = Ecn(tos & IPV4_ECN_MASK);
                        meta.dscp = uint8_t(tos >> 2);
                    }
                }
                if (meta.dstIp != m_cfg.localIp)
                {
                    ++m_counters.rxIgnored;
                }
                else
                {
                    // One datagram, or (GRO) a train split at the segment size.
                    const uint8_t* data = static_cast<const uint8_t*>(h.msg_iov->iov_base);
                    for (size_t off = 0; off < len && !m_closed; off += segment)
                    {
                        size_t part = std::min(segment, len - off);
                        ++m_counters.rxFrames;
                        m_counters.rxBytes += part;
                        DatagramMeta arrived = meta;
                        arrived.ecn = m_backlogEcn.OnDatagram(meta.ecn);
                        m_onDatagram(arrived, data + off, part);
                    }
                }
            }
            h.msg_namelen = sizeof(from[i]);
            h.msg_controllen = sizeof(control[i]);
            h.msg_flags = 0;
        }
        m_counters.rxBacklogMarked = m_backlogEcn.Marked();
        if (unsigned(n) < RX_BATCH)
        {
            m_backlogEcn.OnQueueEmpty(); // the socket had no more
        }
        if (m_onBatch)
        {
            m_onBatch();
        }
        if (unsigned(n) < RX_BATCH)
        {
            break;
        }
    }
}

boost::asio::posix::stream_descriptor*
UdpFramePort::SocketFor(uint16_t srcPort)
{
    auto it = m_tx.find(srcPort);
    if (it != m_tx.end())
    {
        return it->second.get();
    }
    std::string error;
    int fd = OpenUdpSocket(m_cfg.localIp, srcPort, m_cfg.socketBufferBytes, false, error);
    if (fd < 0)
    {
        uint64_t suppressed = 0;
        if (m_errorLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("udp port: cannot open the socket of source port {}: {} ({} more "
                          "errors suppressed)",
                          srcPort,
                          error,
                          suppressed);
        }
        m_tx.emplace(srcPort, nullptr); // do not retry every datagram
        return nullptr;
    }
    spdlog::debug("udp port: send socket for source port {}", srcPort);
    auto sock = std::make_unique<boost::asio::posix::stream_descriptor>(m_io, fd);
    auto* raw = sock.get();
    m_tx.emplace(srcPort, std::move(sock));
    return raw;
}

SendStatus
UdpFramePort::Send(const TxDatagram& tx)
{
    if (m_closed)
    {
        return SendStatus::FAILED;
    }
    TxDatagram fixed;
    const TxDatagram* out = &tx;
    boost::asio::posix::stream_descriptor* sock = nullptr;
    if (tx.meta.srcPort == 0)
    {
        if (m_portZero++ == 0)
        {
            spdlog::warn("udp port: the engine sent a datagram with UDP source port 0; it and "
                         "later ones leave from port {} with the ICRC recomputed",
                         m_cfg.dataPort);
        }
        fixed = tx;
        fixed.meta.srcPort = m_cfg.dataPort;
        if (m_cfg.icrc && tx.length >= ICRC_SIZE)
        {
            m_scratch.assign(tx.buffer, tx.buffer + tx.length);
            StoreIcrc(m_scratch.data() + tx.length - ICRC_SIZE,
                      ComputeDatagramIcrc(fixed.meta, m_scratch.data(), tx.length - ICRC_SIZE));
            fixed.buffer = m_scratch.data();
        }
        out = &fixed;
        sock = &m_rx;
    }
    else
    {
        sock = SocketFor(tx.meta.srcPort);
    }
    if (!sock)
    {
        ++m_counters.txFailed;
        return SendStatus::FAILED;
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(tx.meta.dstIp);
    auto peer = m_peerPorts.find(tx.meta.dstIp);
    to.sin_port = htons(peer != m_peerPorts.end() ? peer->second : tx.meta.dstPort);
    int tos = (int(tx.meta.dscp & IPV4_DSCP_MAX) << 2) | int(tx.meta.ecn);
    // What a queued datagram's entry says (its bytes are in its slot).
    auto describe = [&](TxBatch::Entry& e) {
        e.fd = sock->native_handle();
        e.owner = sock;
        std::memcpy(&e.to, &to, sizeof(to));
        e.toLen = sizeof(to);
        e.tos = tos;
        e.length = uint32_t(out->length);
        e.countedLength = uint32_t(tx.length);
        e.destination = tx.meta.dstIp;
        e.train = m_noTrains.count(tx.meta.dstIp) == 0;
    };
    if (m_reserved && out->buffer == m_batch.Buffer(*m_reserved))
    {
        // Written in place by the engine (ReserveTxBuffer()): queued without a copy.
        describe(*m_reserved);
        m_reserved = nullptr;
        return SendStatus::SENT;
    }
    ReleaseTxBuffer(); // (its bytes stay in place until the next Append())
    if (out->length <= m_batch.SlotBytes() && m_cfg.txBatch > 1)
    {
        if (m_batch.Full() && Flush() == SendStatus::WOULD_BLOCK && m_batch.Full())
        {
            return SendStatus::WOULD_BLOCK;
        }
        TxBatch::Entry& e = m_batch.Append();
        describe(e);
        std::memcpy(m_batch.Buffer(e), out->buffer, out->length);
        return SendStatus::SENT;
    }
    // Unbatched (or too large for a slot): what is queued goes first.
    if (Flush() == SendStatus::WOULD_BLOCK)
    {
        return SendStatus::WOULD_BLOCK;
    }
    iovec iov{out->buffer, out->length};
    alignas(cmsghdr) uint8_t control[CMSG_SPACE(sizeof(int))] = {};
    msghdr h{};
    h.msg_name = &to;
    h.msg_namelen = sizeof(to);
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &tos, sizeof(tos));
    ssize_t n = sendmsg(sock->native_handle(), &h, MSG_DONTWAIT);
    if (n == ssize_t(tx.length))
    {
        ++m_counters.txFrames;
        m_counters.txBytes += tx.length;
        return SendStatus::SENT;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
    {
        m_blocked = sock;
        return SendStatus::WOULD_BLOCK;
    }
    SendFailed(errno, tx.meta.dstIp, tx.length);
    return SendStatus::FAILED;
}

uint8_t*
UdpFramePort::ReserveTxBuffer(size_t& capacity)
{
    capacity = 0;
    if (m_reserved || m_closed || m_cfg.txBatch <= 1 || m_batch.Full())
    {
        return nullptr;
    }
    m_reserved = &m_batch.Append();
    capacity = m_batch.SlotBytes();
    return m_batch.Buffer(*m_reserved);
}

void
UdpFramePort::ReleaseTxBuffer()
{
    if (m_reserved)
    {
        m_batch.Unappend();
        m_reserved = nullptr;
    }
}

SendStatus
UdpFramePort::Flush()
{
    ReleaseTxBuffer(); // (a reservation is used or given back within one pump step)
    if (m_batch.Size() == 0 || m_closed)
    {
        return SendStatus::SENT;
    }
    TxBatch::Result r = m_batch.Flush();
    if (r.gsoRefused != 0)
    {
        spdlog::warn("udp port: the kernel refuses UDP GSO ({}); sending datagram by datagram",
                     std::strerror(r.gsoRefused));
    }
    m_counters.txFrames += r.frames;
    m_counters.txBytes += r.bytes;
    if (r.failed > 0)
    {
        m_counters.txFailed += r.failed - 1; // SendFailed() counts the first
        SendFailed(r.firstError, r.errorDestination, r.errorLength);
    }
    if (r.blocked)
    {
        m_blocked = static_cast<boost::asio::posix::stream_descriptor*>(r.blocked);
        return SendStatus::WOULD_BLOCK;
    }
    return SendStatus::SENT;
}

void
UdpFramePort::SendFailed(int err, uint32_t dstIp, size_t length)
{
    ++m_counters.txFailed;
    uint64_t suppressed = 0;
    if (m_errorLog.Allow(m_clock.Now(), suppressed))
    {
        if (err == EMSGSIZE)
        {
            spdlog::error("udp port: a {}-byte datagram to {} exceeds the path MTU; lower --mtu "
                          "or raise the link MTU ({} more errors suppressed)",
                          length,
                          Ipv4ToString(dstIp),
                          suppressed);
        }
        else
        {
            spdlog::error("udp port: sendmsg to {}: {} ({} more errors suppressed)",
                          Ipv4ToString(dstIp),
                          std::strerror(err),
                          suppressed);
        }
    }
}

void
UdpFramePort::AsyncWaitWritable(WritableHandler handler)
{
    auto* sock = m_blocked ? m_blocked : &m_rx;
    m_blocked = nullptr;
    sock->async_wait(boost::asio::posix::stream_descriptor::wait_write, std::move(handler));
}

void
UdpFramePort::Close()
{
    if (m_closed)
    {
        return;
    }
    Flush(); // best effort: the last ACKs of a session
    m_closed = true;
    boost::system::error_code ignored;
    m_rx.close(ignored);
    for (auto& entry : m_tx)
    {
        if (entry.second)
        {
            entry.second->close(ignored);
        }
    }
}

PortCounters
UdpFramePort::Counters() const
{
    return m_counters;
}

std::string
UdpFramePort::Describe() const
{
    std::string d = "udp " + Ipv4ToString(m_cfg.localIp) + ":" + std::to_string(m_cfg.dataPort);
    if (m_cfg.shards > 1)
    {
        d += " (shard " + std::to_string(m_cfg.shardIndex) + " of " + std::to_string(m_cfg.shards) +
             ")";
    }
    return d;
}

} // namespace hil
} // namespace metaroce
