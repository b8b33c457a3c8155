/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-raw-port.h"

#include "metaroce-endpoint.h"
#include "metaroce-hil-ethernet.h"
#include "metaroce-hil-xdp.h"
#include "metaroce-wire.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <linux/ethtool.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sstream>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

namespace metaroce
{
namespace hil
{
namespace
{

/// Largest frame read (jumbo frames and then some; longer ones are truncated and dropped).
constexpr size_t RX_FRAME_MAX = 65536 + FRAME_HEADERS_SIZE;
/// Frames read per recvmmsg().
constexpr unsigned RX_BATCH = 32;

/**
 * Classic BPF: accept IPv4, UDP, unfragmented, destination port \p port; drop the rest.
 * (The equivalent of tcpdump -dd 'ip and udp dst port 4791 and not ip[6:2] & 0x1fff != 0'.)
 */
std::vector<sock_filter>
DataPortFilter(uint16_t port)
{
    return {
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                     // EtherType
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_IPV4, 0, 7),  //
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 23),                     // IPv4 protocol
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IP_PROTOCOL_UDP, 0, 5), //
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 20),                     // flags + fragment offset
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 3, 0),         // a fragment: drop
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),                    // X = IHL * 4
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, 16),                     // UDP destination port
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 0, 1),            //
        BPF_STMT(BPF_RET | BPF_K, 0x40000),                         // accept
        BPF_STMT(BPF_RET | BPF_K, 0),                               // drop
    };
}

/**
 * Classic BPF of the shards' PACKET_FANOUT group: the member (QPN - FIRST_QPN) mod \p shards
 * by the destination QPN of the BTH after the IPv4 and UDP headers. Loads are relative to the
 * network header (SKF_NET_OFF), where the fanout runs; a frame too short makes a load fail
 * and the program return 0, shard 0, whose engine counts it as malformed.
 */
std::vector<sock_filter>
QpnFanoutProgram(uint32_t shards)
{
    constexpr int32_t NET = SKF_NET_OFF;
    constexpr int32_t QPN = int32_t(UDP_HEADER_SIZE + Bth::DEST_QP); // after the IPv4 header
    return {
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, uint32_t(NET)),          // X = IHL * 4
        BPF_STMT(BPF_LD | BPF_B | BPF_IND, uint32_t(NET + QPN)),     // A = QPN bits 23-16
        BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 16),                     //
        BPF_STMT(BPF_ST, 0),                                         // M[0] = A
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, uint32_t(NET + QPN + 1)), // A = QPN bits 15-0
        BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0),                      // X = M[0]
        BPF_STMT(BPF_ALU | BPF_OR | BPF_X, 0),                       //
        BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, FIRST_QPN),              //
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, shards),                 //
        BPF_STMT(BPF_RET | BPF_A, 0),                                //
    };
}

/**
 * Join packet socket \p fd (bound) to the shards' fanout group: a new one if \p first (\p id
 * is set to the id the kernel gave it, which may be 0), else group \p id.
 * \return "" or what failed
 */
std::string
JoinQpnFanout(int fd, uint32_t shards, bool first, uint32_t& id)
{
    // The id in the low 16 bits, the mode and its flags above; a unique id for the first.
    uint32_t arg = (first ? uint32_t(PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_UNIQUEID)
                          : uint32_t(PACKET_FANOUT_CBPF))
                       << 16 |
                   (id & 0xffff);
    if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg)) != 0)
    {
        return std::string("PACKET_FANOUT: ") + std::strerror(errno);
    }
    if (!first)
    {
        return "";
    }
    uint32_t value = 0;
    socklen_t length = sizeof(value);
    if (getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &value, &length) != 0)
    {
        return std::string("PACKET_FANOUT (its id): ") + std::strerror(errno);
    }
    id = value & 0xffff;
    // The group's program (it needs a member first).
    std::vector<sock_filter> program = QpnFanoutProgram(shards);
    sock_fprog prog{uint16_t(program.size()), program.data()};
    if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT_DATA, &prog, sizeof(prog)) != 0)
    {
        return std::string("PACKET_FANOUT_DATA: ") + std::strerror(errno);
    }
    return "";
}

/// Room for one VLAN tag beyond the MTU and the Ethernet header.
constexpr uint32_t VLAN_TAG_BYTES = 4;

/**
 * Attach the data-port filter to packet socket \p fd, size its buffers and bind it to the
 * interface \p ifindex. \return "" or what failed
 */
std::string
BindPacketSocket(int fd, int ifindex, const RawPortConfig& cfg)
{
    std::vector<sock_filter> filter = DataPortFilter(cfg.dataPort);
    sock_fprog prog{uint16_t(filter.size()), filter.data()};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0)
    {
        return std::string("SO_ATTACH_FILTER: ") + std::strerror(errno);
    }
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    int buffer = cfg.socketBufferBytes;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer)) != 0)
    {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof(buffer)) != 0)
    {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
    }
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_IP);
    sll.sll_ifindex = ifindex;
    if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0)
    {
        return "bind(AF_PACKET, " + cfg.device + "): " + std::strerror(errno);
    }
    return "";
}

/**
 * An ethtool request on interface \p device through socket \p fd.
 * \param command the request (its first field is the command)
 * \return true if the kernel answered it
 */
bool
EthtoolRequest(int fd, const std::string& device, void* command)
{
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, device.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(command);
    return ioctl(fd, SIOCETHTOOL, &ifr) == 0;
}

/// \return the driver of interface \p device (ETHTOOL_GDRVINFO on socket \p fd), or "".
std::string
DriverName(int fd, const std::string& device)
{
    ethtool_drvinfo info{};
    info.cmd = ETHTOOL_GDRVINFO;
    if (!EthtoolRequest(fd, device, &info))
    {
        return "";
    }
    info.driver[sizeof(info.driver) - 1] = '\0';
    return info.driver;
}

/// \return a non-blocking AF_PACKET socket that receives nothing yet, or -1 with \p error.
int
OpenPacketSocket(std::string& error)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        int err = errno;
        error = std::string("socket(AF_PACKET): ") + std::strerror(err);
        if (err == EPERM || err == EACCES)
        {
            error += ". Raw mode needs CAP_NET_RAW: run as root, or `sudo setcap cap_net_raw+ep "
                     "<program>`; --port-mode udp needs no privileges";
        }
    }
    return fd;
}

} // namespace

bool
ParseRawIoMode(const std::string& text, RawIoMode& mode)
{
    if (text == "auto")
    {
        mode = RawIoMode::AUTO;
    }
    else if (text == "ring")
    {
        mode = RawIoMode::RING;
    }
    else if (text == "ring-v3")
    {
        mode = RawIoMode::RING_V3;
    }
    else if (text == "xdp")
    {
        mode = RawIoMode::XDP;
    }
    else if (text == "socket")
    {
        mode = RawIoMode::SOCKET;
    }
    else
    {
        return false;
    }
    return true;
}

bool
ParseRingTxCopy(const std::string& text, RingTxCopy& mode)
{
    if (text == "auto")
    {
        mode = RingTxCopy::AUTO;
    }
    else if (text == "on")
    {
        mode = RingTxCopy::ON;
    }
    else if (text == "off")
    {
        mode = RingTxCopy::OFF;
    }
    else
    {
        return false;
    }
    return true;
}

uint32_t
DeviceQueueCount(int fd, const std::string& device, std::string& detail)
{
    ethtool_channels channels{};
    channels.cmd = ETHTOOL_GCHANNELS;
    if (!EthtoolRequest(fd, device, &channels))
    {
        detail = std::string("ETHTOOL_GCHANNELS: ") + std::strerror(errno);
        return 1;
    }
    // A veth reports separate rx and tx counts, a NIC mostly combined channels.
    const uint32_t rx = channels.rx_count + channels.combined_count;
    const uint32_t tx = channels.tx_count + channels.combined_count;
    detail = "rx " + std::to_string(rx) + ", tx " + std::to_string(tx);
    return std::max<uint32_t>(1, std::min(rx, tx));
}

bool
LookupNeighbour(const std::string& device, uint32_t ip, MacAddress& mac)
{
    std::ifstream arp("/proc/net/arp");
    std::string line;
    std::getline(arp, line); // header
    std::string want = Ipv4ToString(ip);
    while (std::getline(arp, line))
    {
        std::istringstream fields(line);
        std::string address;
        std::string hwType;
        std::string flags;
        std::string hw;
        std::string mask;
        std::string dev;
        if (!(fields >> address >> hwType >> flags >> hw >> mask >> dev))
        {
            continue;
        }
        // Flag 0x2 = ATF_COM: the entry is complete.
        if (address == want && dev == device && (std::stoul(flags, nullptr, 16) & 0x2) &&
            ParseMac(hw, mac))
        {
            return true;
        }
    }
    return false;
}

std::unique_ptr<RawFramePort>
RawFramePort::Open(boost::asio::io_context& io,
                   const HostClock& clock,
                   const RawPortConfig& cfg,
                   std::string& error)
{
    // Protocol 0 receives nothing until bind(): the rings and the filter are in place before
    // any frame can queue up unfiltered.
    int fd = OpenPacketSocket(error);
    if (fd < 0)
    {
        return nullptr;
    }
    auto fail = [&](const std::string& what) {
        error = what;
        close(fd);
        return nullptr;
    };
    ifreq ifr{};
    if (cfg.device.empty() || cfg.device.size() >= IFNAMSIZ)
    {
        return fail("raw mode needs an interface name (--dev)");
    }
    std::strncpy(ifr.ifr_name, cfg.device.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0)
    {
        return fail("interface " + cfg.device + ": " + std::strerror(errno));
    }
    int ifindex = ifr.ifr_ifindex;
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
    {
        return fail("SIOCGIFHWADDR " + cfg.device + ": " + std::strerror(errno));
    }
    MacAddress mac;
    std::memcpy(mac.bytes, ifr.ifr_hwaddr.sa_data, MAC_ADDRESS_SIZE);
    if (ioctl(fd, SIOCGIFMTU, &ifr) != 0)
    {
        return fail("SIOCGIFMTU " + cfg.device + ": " + std::strerror(errno));
    }
    uint32_t mtu = uint32_t(ifr.ifr_mtu);
    RawPortConfig c = cfg;
    if (c.localIp == 0)
    {
        ifr.ifr_addr.sa_family = AF_INET;
        if (ioctl(fd, SIOCGIFADDR, &ifr) != 0)
        {
            return fail("interface " + cfg.device + " has no IPv4 address (give --local-ip)");
        }
        c.localIp = ntohl(reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr)->sin_addr.s_addr);
    }
    std::unique_ptr<FrameRing> ring;
    int wakeFd = -1; // AF_XDP shards: this shard's hand-off wake-up
    if (cfg.io == RawIoMode::XDP)
    {
        if (cfg.shards > 1)
        {
            if (cfg.shardIndex >= cfg.shards || (cfg.shardIndex > 0 && !cfg.xdpGroup))
            {
                return fail("raw port: AF_XDP shard " + std::to_string(cfg.shardIndex) + " of " +
                            std::to_string(cfg.shards) + " without its group");
            }
            std::string detail;
            const uint32_t queues = DeviceQueueCount(fd, cfg.device, detail);
            if (queues < cfg.shards)
            {
                const std::string n = std::to_string(cfg.shards);
                return fail("--threads " + n + " with --raw-io xdp binds one AF_XDP socket to " +
                            "each of queues 0-" + std::to_string(cfg.shards - 1) + " of " +
                            cfg.device + ", which has " + std::to_string(queues) + " (" + detail +
                            "): give it " + n + " queues (a veth: `ip link add ... numrxqueues " +
                            n + " numtxqueues " + n + " type veth peer ... numrxqueues " + n +
                            " numtxqueues " + n + "`; a NIC: `ethtool -L " + cfg.device +
                            " combined " + n + "`) or run fewer threads");
            }
            if (queues > cfg.shards && cfg.shardIndex == 0)
            {
                // No socket on the other queues: the XDP program passes their frames to the
                // kernel, where no one reads them (review of the AF_XDP shards: with RSS over 4
                // queues and 2 threads, frames were lost and resent). A NIC may steer the data
                // port to the first queues by flow rules, so this is a warning, not an error.
                spdlog::warn("raw port: {} has {} queues ({}) and --threads {} binds AF_XDP "
                             "sockets to queues 0-{} only: frames that arrive on queues {}-{} "
                             "reach no thread and are lost, unless flow rules steer the data "
                             "port to queues below {} (ethtool -N) or the device has {} "
                             "(ethtool -L {} combined {}; a veth: numrxqueues {})",
                             cfg.device,
                             queues,
                             detail,
                             cfg.shards,
                             cfg.shards - 1,
                             cfg.shards,
                             queues - 1,
                             cfg.shards,
                             cfg.shards,
                             cfg.device,
                             cfg.shards,
                             cfg.shards);
            }
            if (!cfg.xdpGroup)
            {
                c.xdpGroup = std::make_shared<XdpShardGroup>();
                std::string why;
                c.xdpGroup->handoff = ShardHandoff::Create(cfg.shards, XDP_MAX_FRAME, why);
                if (!c.xdpGroup->handoff)
                {
                    return fail(why);
                }
            }
        }
        XdpMode xdpMode = cfg.xdpMode;
        if (xdpMode == XdpMode::AUTO && cfg.shards > 1 && cfg.shardIndex == 0 &&
            DriverName(fd, cfg.device) == "veth")
        {
            // A veth hands a frame sent on its queue i to the peer's queue i in native XDP; in
            // generic XDP they all reached queue 0, so every frame of shard 1 and up was handed
            // off (docs/hil.md, "Several engine threads"). A veth has no zero-copy either way.
            xdpMode = XdpMode::NATIVE;
            spdlog::info("raw port: AF_XDP on veth {} with {} threads: native XDP, so that a "
                         "frame arrives on the queue of the peer's thread that sent it",
                         cfg.device,
                         cfg.shards);
        }
        // The packet socket served the interface queries; the port polls the AF_XDP socket.
        std::string why;
        std::shared_ptr<XdpProgram> program = c.xdpGroup ? c.xdpGroup->program : nullptr;
        auto xdp = XdpSocket::Open(cfg.device,
                                   ifindex,
                                   cfg.dataPort,
                                   xdpMode,
                                   cfg.shards > 1 ? cfg.shardIndex : 0,
                                   program,
                                   why);
        if (!xdp)
        {
            return fail(why);
        }
        if (c.xdpGroup)
        {
            c.xdpGroup->program = program;
            // Other shards wake this one's loop through its eventfd (the port polls a copy).
            wakeFd = fcntl(c.xdpGroup->handoff->WakeFd(cfg.shardIndex), F_DUPFD_CLOEXEC, 0);
            if (wakeFd < 0)
            {
                return fail(std::string("the hand-off eventfd: ") + std::strerror(errno));
            }
        }
        const int xdpFd = fcntl(xdp->Fd(), F_DUPFD_CLOEXEC, 0);
        if (xdpFd < 0)
        {
            const int err = errno;
            if (wakeFd >= 0)
            {
                close(wakeFd);
            }
            return fail(std::string("AF_XDP socket: ") + std::strerror(err));
        }
        close(fd);
        fd = xdpFd;
        ring = std::move(xdp);
    }
    else if (cfg.io != RawIoMode::SOCKET)
    {
        PacketRingConfig rc;
        rc.maxFrameBytes = mtu + ETHERNET_HEADER_SIZE + VLAN_TAG_BYTES;
        rc.blocks = cfg.io == RawIoMode::RING_V3;
        rc.retireTimeoutMs = cfg.ringRetireMs;
        // A veth hands each frame to its peer inside the kernel, within the send(): the kernel
        // copies a frame sent from the ring's pages into pages it allocates (skb_copy_ubufs),
        // and gives the slot back before send() returns. So there the kernel copies each frame
        // into the packet instead, and a few slots do, which stay in the cache (docs/hil.md,
        // "Raw port I/O: PACKET_MMAP rings").
        const bool veth = DriverName(fd, cfg.device) == "veth";
        rc.txCopy =
            cfg.ringTxCopy == RingTxCopy::ON || (cfg.ringTxCopy == RingTxCopy::AUTO && veth);
        if (veth)
        {
            rc.txFrames = VETH_TX_RING_SLOTS;
        }
        // As much as the socket's queue holds: the kernel doubles SO_RCVBUF for its overhead.
        rc.rxBytes = uint32_t(std::max(cfg.socketBufferBytes, 1 << 20)) * 2;
        std::string why;
        ring = PacketRing::Map(fd, rc, why);
        if (!ring && cfg.io != RawIoMode::AUTO)
        {
            return fail("PACKET_MMAP rings on " + cfg.device + ": " + why +
                        " (--raw-io socket uses recvmmsg/sendmmsg instead)");
        }
        if (!ring)
        {
            // The socket may hold half a ring set-up: start again with a fresh one.
            spdlog::warn("raw port: PACKET_MMAP rings on {} unavailable ({}): falling back to "
                         "recvmmsg/sendmmsg (--raw-io socket says so without this warning)",
                         cfg.device,
                         why);
            close(fd);
            fd = OpenPacketSocket(error);
            if (fd < 0)
            {
                return nullptr;
            }
        }
    }
    if (cfg.io != RawIoMode::XDP)
    {
        std::string why = BindPacketSocket(fd, ifindex, cfg);
        if (!why.empty())
        {
            return fail(why);
        }
    }
    if (cfg.shards > 1 && cfg.io != RawIoMode::XDP)
    {
        if (cfg.shardIndex >= cfg.shards)
        {
            return fail("raw port: shard " + std::to_string(cfg.shardIndex) + " of " +
                        std::to_string(cfg.shards));
        }
        c.fanoutId = cfg.fanoutId;
        std::string why = JoinQpnFanout(fd, cfg.shards, cfg.shardIndex == 0, c.fanoutId);
        if (!why.empty())
        {
            return fail(why);
        }
    }
    // Hold the data port so the kernel drops our datagrams silently (full receive buffer)
    // instead of answering each with ICMP port unreachable. Best effort: a UDP-mode daemon
    // may hold it already, which has the same effect.
    int guard = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (guard >= 0)
    {
        int tiny = 1;
        setsockopt(guard, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(cfg.dataPort);
        addr.sin_addr.s_addr = htonl(c.localIp);
        if (bind(guard, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
        {
            close(guard);
            guard = -1;
        }
    }
    return std::unique_ptr<RawFramePort>(
        new RawFramePort(io, clock, c, fd, guard, ifindex, mac, mtu, std::move(ring), wakeFd));
}

RawFramePort::RawFramePort(boost::asio::io_context& io,
                           const HostClock& clock,
                           const RawPortConfig& cfg,
                           int fd,
                           int guardFd,
                           int ifindex,
                           const MacAddress& mac,
                           uint32_t mtu,
                           std::unique_ptr<FrameRing> ring,
                           int handoffWakeFd)
    : m_clock(clock),
      m_cfg(cfg),
      m_sock(io, fd),
      m_fd(fd),
      m_guardFd(guardFd),
      m_ifindex(ifindex),
      m_mac(mac),
      m_mtu(mtu),
      m_rxBuffer(ring ? 0 : RX_BATCH * RX_FRAME_MAX),
      m_txBuffer(RX_FRAME_MAX),
      m_batch(std::max<uint32_t>(ring ? 1 : cfg.txBatch, 1), mtu + FRAME_HEADERS_SIZE),
      m_ring(std::move(ring)),
      m_backlogEcn(cfg.backlogEcn),
      m_handoff(cfg.xdpGroup ? cfg.xdpGroup->handoff : nullptr),
      m_handoffWake(io)
{
    if (handoffWakeFd >= 0)
    {
        m_handoffWake.assign(handoffWakeFd);
    }
    if (cfg.busyPollUs > 0)
    {
        int us = int(cfg.busyPollUs);
        if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) != 0)
        {
            spdlog::warn("raw port: SO_BUSY_POLL {} us: {}; receiving without it",
                         us,
                         std::strerror(errno));
        }
    }
}

RawFramePort::~RawFramePort()
{
    Close();
}

void
RawFramePort::LearnPeer(uint32_t ip,
                        const MacAddress& mac,
                        uint16_t /*dataPort*/,
                        bool /*takesTrains*/)
{
    if (mac == MacAddress())
    {
        return;
    }
    m_announced[ip] = mac;
}

const MacAddress*
RawFramePort::Resolve(uint32_t ip)
{
    if (m_cfg.staticPeerMac)
    {
        return &m_cfg.peerMac;
    }
    auto it = m_neighbours.find(ip);
    if (it != m_neighbours.end())
    {
        return &it->second;
    }
    MacAddress mac;
    if (LookupNeighbour(m_cfg.device, ip, mac))
    {
        spdlog::info("raw port: {} is at {} (kernel neighbour table of {})",
                     Ipv4ToString(ip),
                     MacToString(mac),
                     m_cfg.device);
        return &m_neighbours.emplace(ip, mac).first->second;
    }
    auto announced = m_announced.find(ip);
    if (announced != m_announced.end())
    {
        spdlog::info("raw port: {} is at {} (announced by the peer; same L2 segment assumed)",
                     Ipv4ToString(ip),
                     MacToString(announced->second));
        return &m_neighbours.emplace(ip, announced->second).first->second;
    }
    return nullptr;
}

void
RawFramePort::Start(ReceiveHandler onDatagram, BatchHandler onBatch)
{
    m_onDatagram = std::move(onDatagram);
    m_onBatch = std::move(onBatch);
    DoReceive();
    DoHandoffWait();
}

void
RawFramePort::DoHandoffWait()
{
    if (m_closed || !m_handoffWake.is_open())
    {
        return;
    }
    m_handoffWake.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                             [this](const boost::system::error_code& error) {
                                 if (error || m_closed)
                                 {
                                     return; // closed
                                 }
                                 // Clear the wake-up first: a frame pushed after the drain
                                 // wakes this loop again.
                                 uint64_t count = 0;
                                 [[maybe_unused]] ssize_t n =
                                     read(m_handoffWake.native_handle(), &count, sizeof(count));
                                 // The socket's ring too, so that --backlog-ecn's depth
                                 // restarts only when both were found empty; frames left in
                                 // a hand-off ring make ReceiveNow wake this loop again (the
                                 // wake-up just read merged every push into one).
                                 ReceiveNow(4);
                                 DoHandoffWait();
                             });
}

bool
RawFramePort::HandOff(const uint8_t* data, size_t len)
{
    uint32_t owner = 0;
    if (!FrameQpnShard(data, len, m_cfg.shards, owner) || owner == m_cfg.shardIndex)
    {
        return false; // ours (or too short to say: ours to count as malformed)
    }
    if (m_handoff->Ring(m_cfg.shardIndex, owner).Push(data, uint32_t(len)))
    {
        ++m_counters.rxHandedOff;
        m_wakeTargets |= uint64_t(1) << owner;
    }
    else
    {
        ++m_counters.rxHandoffDrops;
    }
    return true;
}

void
RawFramePort::WakeHandoffTargets()
{
    for (uint32_t shard = 0; m_wakeTargets != 0; ++shard, m_wakeTargets >>= 1)
    {
        if (m_wakeTargets & 1)
        {
            m_handoff->Wake(shard);
        }
    }
}

bool
RawFramePort::DrainHandoffs(size_t maxFrames, bool& emptied)
{
    bool any = false;
    emptied = true;
    for (uint32_t from = 0; from < m_handoff->Shards() && !m_closed; ++from)
    {
        if (from == m_cfg.shardIndex)
        {
            continue;
        }
        const size_t n = m_handoff->Ring(from, m_cfg.shardIndex)
                             .Drain(maxFrames, [this, &any](const uint8_t* data, uint32_t length) {
                                 if (HandleFrame(data, length, false))
                                 {
                                     any = true;
                                 }
                             });
        emptied = emptied && n < maxFrames;
    }
    return any;
}

void
RawFramePort::DoReceive()
{
    if (m_closed)
    {
        return;
    }
    m_sock.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this](const boost::system::error_code& error) { OnReceive(error); });
}

void
RawFramePort::OnReceive(const boost::system::error_code& error)
{
    if (error)
    {
        if (error != boost::asio::error::operation_aborted)
        {
            spdlog::error("raw port: receive wait failed: {}", error.message());
        }
        return;
    }
    ReceiveNow(4);
    DoReceive();
}

void
RawFramePort::PollReceive()
{
    if (!m_closed && m_onDatagram)
    {
        ReceiveNow(1);
    }
}

void
RawFramePort::ReceiveNow(int maxRounds)
{
    bool any = false;
    if (m_ring)
    {
        // As many frames per wake-up as the socket path reads, then let timers run.
        const size_t most = size_t(maxRounds) * RX_BATCH;
        bool emptied = m_ring->Receive(most, [this, &any](const RingFrame& f) {
            if (f.packetType != PACKET_OUTGOING && !(m_handoff && HandOff(f.data, f.length)) &&
                HandleFrame(f.data, f.length, f.length < f.wireLength))
            {
                any = true;
            }
        }) < most;
        if (m_handoff)
        {
            WakeHandoffTargets();
            bool handoffsEmptied = true;
            any = DrainHandoffs(most, handoffsEmptied) || any;
            if (!handoffsEmptied)
            {
                m_handoff->Wake(m_cfg.shardIndex); // the rest on the next turn of the loop
            }
            // The hand-off rings are this shard's receive queue too (--backlog-ecn).
            emptied = emptied && handoffsEmptied;
        }
        if (emptied)
        {
            // The ring (and the hand-off rings) had no more: a run of frames read counts
            // towards --backlog-ecn's depth until then.
            m_backlogEcn.OnQueueEmpty();
        }
    }
    else
    {
        any = ReceiveBatches(maxRounds);
    }
    if (any && m_onBatch)
    {
        m_onBatch();
    }
}

bool
RawFramePort::HandleFrame(const uint8_t* data, size_t len, bool truncated)
{
    if (truncated)
    {
        ++m_counters.rxMalformed;
        return false;
    }
    ParsedFrame frame;
    if (!AcceptEngineFrame(data,
                           len,
                           m_cfg.localIp,
                           m_cfg.dataPort,
                           "raw port",
                           m_clock.Now(),
                           m_malformedLog,
                           m_counters,
                           frame))
    {
        return false;
    }
    frame.meta.ecn = m_backlogEcn.OnDatagram(frame.meta.ecn);
    m_counters.rxBacklogMarked = m_backlogEcn.Marked();
    m_onDatagram(frame.meta, frame.datagram, frame.datagramLen);
    return true;
}

bool
RawFramePort::ReceiveBatches(int maxRounds)
{
    bool any = false;
    mmsghdr msgs[RX_BATCH];
    iovec iov[RX_BATCH];
    sockaddr_ll from[RX_BATCH];
    // Up to a few batches per wake-up, then let other handlers (timers, control) run.
    for (int round = 0; round < maxRounds && !m_closed; ++round)
    {
        for (unsigned i = 0; i < RX_BATCH; ++i)
        {
            iov[i] = {m_rxBuffer.data() + i * RX_FRAME_MAX, RX_FRAME_MAX};
            std::memset(&msgs[i], 0, sizeof(msgs[i]));
            msgs[i].msg_hdr.msg_name = &from[i];
            msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int got = recvmmsg(m_sock.native_handle(), msgs, RX_BATCH, MSG_DONTWAIT, nullptr);
        if (got <= 0)
        {
            m_backlogEcn.OnQueueEmpty();
            break;
        }
        for (int i = 0; i < got; ++i)
        {
            if (from[i].sll_pkttype == PACKET_OUTGOING)
            {
                continue; // our own frames on kernels without PACKET_IGNORE_OUTGOING
            }
            if (HandleFrame(static_cast<const uint8_t*>(iov[i].iov_base),
                            msgs[i].msg_len,
                            (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0))
            {
                any = true;
            }
        }
        if (unsigned(got) < RX_BATCH)
        {
            m_backlogEcn.OnQueueEmpty(); // the socket had no more
            break;
        }
    }
    return any;
}

uint8_t*
RawFramePort::ReserveTxBuffer(size_t& capacity)
{
    capacity = 0;
    if (!m_ring || m_closed || m_reservedSlot || m_ring->TxSlotBytes() <= FRAME_HEADERS_SIZE)
    {
        return nullptr;
    }
    m_reservedSlot = m_ring->TxSlot(); // (the same slot until TxCommit())
    if (!m_reservedSlot)
    {
        return nullptr;
    }
    capacity = m_ring->TxSlotBytes() - FRAME_HEADERS_SIZE;
    return m_reservedSlot + FRAME_HEADERS_SIZE;
}

void
RawFramePort::ReleaseTxBuffer()
{
    m_reservedSlot = nullptr; // the slot stays free: TxSlot() hands it out again
}

SendStatus
RawFramePort::Send(const TxDatagram& tx)
{
    uint8_t* const reserved = m_reservedSlot;
    m_reservedSlot = nullptr;
    if (m_closed)
    {
        return SendStatus::FAILED;
    }
    const MacAddress* dst = Resolve(tx.meta.dstIp);
    if (!dst)
    {
        uint64_t suppressed = 0;
        ++m_counters.txFailed;
        if (m_errorLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("raw port: no MAC address for {} on {}: not in the neighbour table; "
                          "give --peer-mac (the gateway's MAC for a routed peer) ({} more "
                          "suppressed)",
                          Ipv4ToString(tx.meta.dstIp),
                          m_cfg.device,
                          suppressed);
        }
        return SendStatus::FAILED;
    }
    // A datagram the engine wrote into the reserved ring slot gets its headers in front of it
    // there; any other is framed in m_txBuffer and copied to where it goes.
    // (The ring's current slot must still be the reserved one: nothing may have flushed or
    // reclaimed in between, or the commit would send another slot.)
    const bool inSlot =
        reserved && tx.buffer == reserved + FRAME_HEADERS_SIZE && m_ring->TxSlot() == reserved;
    const size_t len = EncapsulateForPort(tx,
                                          m_cfg.dataPort,
                                          m_mac,
                                          *dst,
                                          m_mtu,
                                          inSlot ? reserved : m_txBuffer.data(),
                                          inSlot ? m_ring->TxSlotBytes() : m_txBuffer.size(),
                                          "raw port",
                                          m_cfg.device,
                                          "the link MTU",
                                          m_clock.Now(),
                                          m_errorLog,
                                          m_counters);
    if (len == 0)
    {
        return SendStatus::FAILED;
    }
    if (inSlot)
    {
        return CommitRingSlot(len, tx.length);
    }
    if (m_ring)
    {
        return SendToRing(len, tx.length);
    }
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_protocol = htons(ETH_P_IP);
    to.sll_ifindex = m_ifindex;
    to.sll_halen = MAC_ADDRESS_SIZE;
    std::memcpy(to.sll_addr, dst->bytes, MAC_ADDRESS_SIZE);
    if (m_cfg.txBatch > 1 && len <= m_batch.SlotBytes())
    {
        if (m_batch.Full() && Flush() == SendStatus::WOULD_BLOCK && m_batch.Full())
        {
            return SendStatus::WOULD_BLOCK;
        }
        TxBatch::Entry& e = m_batch.Append();
        e.fd = m_sock.native_handle();
        e.owner = &m_sock;
        std::memcpy(&e.to, &to, sizeof(to));
        e.toLen = sizeof(to);
        e.length = uint32_t(len);
        e.countedLength = uint32_t(tx.length);
        e.destination = tx.meta.dstIp;
        std::memcpy(m_batch.Buffer(e), m_txBuffer.data(), len);
        return SendStatus::SENT;
    }
    if (Flush() == SendStatus::WOULD_BLOCK)
    {
        return SendStatus::WOULD_BLOCK;
    }
    ssize_t n = sendto(m_sock.native_handle(),
                       m_txBuffer.data(),
                       len,
                       MSG_DONTWAIT,
                       reinterpret_cast<sockaddr*>(&to),
                       sizeof(to));
    return CountSendResult(n,
                           len,
                           tx.length,
                           "raw port: send on",
                           m_cfg.device,
                           m_clock.Now(),
                           m_errorLog,
                           m_counters);
}

SendStatus
RawFramePort::SendToRing(size_t len, uint64_t datagramLen)
{
    if (len > m_ring->TxSlotBytes())
    {
        // PACKET_MMAP slots hold MTU-sized frames; AF_XDP chunks only XDP_MAX_FRAME bytes.
        ++m_counters.txFailed;
        uint64_t suppressed = 0;
        if (m_errorLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("raw port: a {}-byte frame does not fit a {}-byte transmit slot of {}: "
                          "lower --mtu ({} more suppressed)",
                          len,
                          m_ring->TxSlotBytes(),
                          m_ring->Describe(),
                          suppressed);
        }
        return SendStatus::FAILED;
    }
    uint8_t* slot = m_ring->TxSlot();
    if (!slot && Flush() == SendStatus::SENT)
    {
        slot = m_ring->TxSlot();
    }
    if (!slot)
    {
        return SendStatus::WOULD_BLOCK; // every slot is the kernel's until it has sent them
    }
    std::memcpy(slot, m_txBuffer.data(), len);
    return CommitRingSlot(len, datagramLen);
}

SendStatus
RawFramePort::CommitRingSlot(size_t len, uint64_t datagramLen)
{
    m_ring->TxCommit(uint32_t(len));
    m_ringPendingBytes += datagramLen;
    if (m_ring->TxPending() >= m_cfg.txBatch)
    {
        Flush(); // --tx-batch bounds the frames one send() hands over
    }
    return SendStatus::SENT;
}

SendStatus
RawFramePort::Flush()
{
    if (m_ring && !m_closed)
    {
        const uint32_t pending = m_ring->TxPending();
        const int err = m_ring->Flush(m_sock.native_handle());
        if (err == 0)
        {
            m_counters.txFrames += pending;
            m_counters.txBytes += m_ringPendingBytes;
            m_ringPendingBytes = 0;
            return SendStatus::SENT;
        }
        if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS)
        {
            return SendStatus::WOULD_BLOCK;
        }
        // The ready slots stay ready and go with the next flush (a link that went down).
        uint64_t suppressed = 0;
        if (m_errorLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("raw port: transmit ring on {}: {} ({} more suppressed)",
                          m_cfg.device,
                          std::strerror(err),
                          suppressed);
        }
        return SendStatus::SENT;
    }
    if (m_batch.Size() == 0 || m_closed)
    {
        return SendStatus::SENT;
    }
    TxBatch::Result r = m_batch.Flush();
    m_counters.txFrames += r.frames;
    m_counters.txBytes += r.bytes;
    if (r.failed > 0)
    {
        m_counters.txFailed += r.failed;
        uint64_t suppressed = 0;
        if (m_errorLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("raw port: send on {}: {} ({} more suppressed)",
                          m_cfg.device,
                          std::strerror(r.firstError),
                          suppressed);
        }
    }
    return r.blocked ? SendStatus::WOULD_BLOCK : SendStatus::SENT;
}

void
RawFramePort::AsyncWaitWritable(WritableHandler handler)
{
    m_sock.async_wait(boost::asio::posix::stream_descriptor::wait_write, std::move(handler));
}

void
RawFramePort::Close()
{
    if (m_closed)
    {
        return;
    }
    Flush(); // best effort: the last ACKs of a session
    m_closed = true;
    boost::system::error_code ignored;
    m_sock.close(ignored);
    m_handoffWake.close(ignored);
    if (m_guardFd >= 0)
    {
        close(m_guardFd);
        m_guardFd = -1;
    }
}

void
RawFramePort::ReadKernelDrops() const
{
    if (!m_closed)
    {
        m_counters.rxKernelDrops += m_ring ? m_ring->ReadDrops(m_fd) : PacketSocketDrops(m_fd);
    }
}

PortCounters
RawFramePort::Counters() const
{
    ReadKernelDrops();
    return m_counters;
}

std::string
RawFramePort::Describe() const
{
    std::string d = "raw " + m_cfg.device + " " + Ipv4ToString(m_cfg.localIp) + " " +
                    MacToString(m_mac) + " mtu " + std::to_string(m_mtu) + ", " +
                    (m_ring ? m_ring->Describe() : std::string("recvmmsg/sendmmsg"));
    if (m_cfg.shards > 1)
    {
        d += " (shard " + std::to_string(m_cfg.shardIndex) + " of " + std::to_string(m_cfg.shards) +
             ")";
    }
    return d;
}

} // namespace hil
} // namespace metaroce
