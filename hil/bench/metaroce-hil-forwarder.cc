/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-hil-forwarder: a loss- and latency-injecting Ethernet forwarder between two
 * interfaces (a "bump in the wire"), for HIL benchmarks and tests where the kernel's netem is
 * not available. It runs in a network namespace between the two endpoints' namespaces:
 *
 *   ns A: va 10.250.1.2 --veth-- ma [ns M: forwarder] mb --veth-- vb 10.250.1.1 :ns B
 *
 * Every frame that arrives on one interface leaves on the other (ARP and the TCP control
 * plane included), after --delay-us and, with --rate-mbps, after the frames ahead of it have
 * been serialized at that rate. Frames of the data plane (IPv4/UDP to one of the --udp-port
 * ports, 4791 by default; every frame with --drop-any) are dropped with probability --loss
 * (or per direction --loss-ab / --loss-ba), from a seeded generator per direction, so the
 * same frame sequence meets the same drops. The delay queue holds --queue-frames frames per
 * direction; a frame arriving to a full queue is dropped and counted as an overflow, as a
 * switch's tail drop.
 *
 * I/O is batched: recvmmsg() on one AF_PACKET socket per interface, sendmmsg() of every
 * frame that is due, one ppoll() with a microsecond timeout for the next departure. Needs
 * CAP_NET_RAW. Prints a line per direction every --report seconds, a summary and a RESULT
 * line at the end (--duration, SIGINT or SIGTERM).
 */

#include "metaroce-hil-options.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace
{

using Clock = std::chrono::steady_clock;

/// Frames read or written per system call.
constexpr unsigned BATCH = 64;
/// The virtio-net header (struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start,
/// csum_offset) in front of each frame with PACKET_VNET_HDR. <linux/virtio_net.h> is not C++.
constexpr size_t VNET_HDR_SIZE = 10;
/// Room for the virtio-net header, an Ethernet header and a VLAN tag beyond the interface MTU.
constexpr size_t FRAME_OVERHEAD = VNET_HDR_SIZE + 14 + 4;

volatile sig_atomic_t g_stop = 0;

void
OnSignal(int)
{
    g_stop = 1;
}

/// Settings from the command line.
struct Options
{
    std::string a;              //!< interface of side A
    std::string b;              //!< interface of side B
    double lossAb{0};           //!< drop probability A -> B
    double lossBa{0};           //!< drop probability B -> A
    double delayUs{0};          //!< added one-way latency
    double rateMbps{0};         //!< serialization rate per direction (0: none)
    uint64_t seed{1};           //!< drop seed
    std::set<uint16_t> ports;   //!< UDP destination ports of the data plane
    bool dropAny{false};        //!< drop from every frame, not only the data plane
    uint32_t queueFrames{4096}; //!< delay-queue capacity per direction
    double duration{0};         //!< seconds (0: until a signal)
    double report{0};           //!< report interval, seconds (0: none)
};

/// What one direction counts.
struct Counters
{
    uint64_t rxFrames{0};      //!< frames received
    uint64_t rxBytes{0};       //!< their bytes
    uint64_t dataFrames{0};    //!< of them, data-plane frames (subject to loss)
    uint64_t dropped{0};       //!< dropped by the loss model
    uint64_t overflow{0};      //!< dropped because the delay queue was full
    uint64_t oversize{0};      //!< larger than a slot (a GSO frame) or truncated: dropped
    uint64_t forwarded{0};     //!< sent on the other interface
    uint64_t forwardedData{0}; //!< of them, data-plane frames
    uint64_t txBytes{0};       //!< bytes sent
    uint64_t txErrors{0};      //!< frames the kernel refused (not EAGAIN): dropped
    uint64_t gsoTrains{0};     //!< UDP GSO trains split into datagrams (each counted above)
    uint64_t kernelDrops{0};   //!< frames the kernel dropped before we read them (full buffer)
};

/// One frame waiting in the delay queue.
struct Slot
{
    Clock::time_point due; //!< departure time
    uint32_t length{0};    //!< frame bytes
    bool data{false};      //!< a data-plane frame
};

/// One direction: frames read from rxFd wait in a FIFO and leave on txFd when due.
struct Direction
{
    const char* name{""};        //!< "a_to_b" or "b_to_a"
    int rxFd{-1};                //!< socket of the ingress interface
    int txFd{-1};                //!< socket of the egress interface
    double loss{0};              //!< drop probability
    std::mt19937_64 rng;         //!< drop generator
    size_t slotSize{0};          //!< bytes per slot
    std::vector<uint8_t> frames; //!< queueFrames slots of slotSize bytes
    std::vector<Slot> slots;     //!< the FIFO (ring)
    size_t head{0};              //!< oldest queued frame
    size_t count{0};             //!< frames queued
    Clock::time_point lastDue{}; //!< departure of the newest frame (serialization)
    bool txBlocked{false};       //!< the egress socket said EAGAIN
    Counters c;                  //!< counters
    Counters lastReport;         //!< counters at the previous report

    uint8_t* Frame(size_t index)
    {
        return frames.data() + index * slotSize;
    }
};

/// \return true if \p frame is IPv4/UDP to one of \p ports (one VLAN tag allowed).
bool
IsDataFrame(const uint8_t* frame, size_t len, const std::set<uint16_t>& ports)
{
    size_t off = 12;
    if (len < off + 2)
    {
        return false;
    }
    uint16_t type = uint16_t(frame[off] << 8 | frame[off + 1]);
    off += 2;
    if (type == 0x8100 && len >= off + 4)
    {
        type = uint16_t(frame[off + 2] << 8 | frame[off + 3]);
        off += 4;
    }
    if (type != 0x0800 || len < off + 20)
    {
        return false;
    }
    const uint8_t* ip = frame + off;
    size_t ihl = size_t(ip[0] & 0x0f) * 4;
    if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != 17 || len < off + ihl + 8)
    {
        return false;
    }
    bool fragment = (uint16_t(ip[6] << 8 | ip[7]) & 0x1fff) != 0;
    if (fragment)
    {
        return false;
    }
    const uint8_t* udp = ip + ihl;
    uint16_t dstPort = uint16_t(udp[2] << 8 | udp[3]);
    return ports.count(dstPort) != 0;
}

/// Open an AF_PACKET socket on \p ifname. \return the fd, or -1 with \p error set.
int
OpenPacketSocket(const std::string& ifname, uint32_t& mtu, std::string& error)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0)
    {
        int err = errno;
        error = std::string("socket(AF_PACKET): ") + std::strerror(err);
        if (err == EPERM || err == EACCES)
        {
            error += ". The forwarder needs CAP_NET_RAW: run it as root (for example under "
                     "`ip netns exec`) or `setcap cap_net_raw+ep metaroce-hil-forwarder`";
        }
        return -1;
    }
    unsigned ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0)
    {
        error = "interface " + ifname + ": " + std::strerror(errno);
        close(fd);
        return -1;
    }
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    mtu = 1500;
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
    {
        mtu = uint32_t(ifr.ifr_mtu);
    }
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = int(ifindex);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        error = "bind(AF_PACKET, " + ifname + "): " + std::strerror(errno);
        close(fd);
        return -1;
    }
    int one = 1;
    // Our own transmissions must not come back to us as received frames.
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0)
    {
        error = std::string("PACKET_IGNORE_OUTGOING: ") + std::strerror(errno) +
                " (needs Linux 4.20 or later)";
        close(fd);
        return -1;
    }
    // Frames from a veth carry partial checksums (checksum offload): the virtio-net header in
    // front of each frame says so on receive, and hands the same state back on send, so the
    // receiving kernel accepts the frame as its sender's kernel would have.
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0)
    {
        error = std::string("PACKET_VNET_HDR: ") + std::strerror(errno);
        close(fd);
        return -1;
    }
    packet_mreq mreq{};
    mreq.mr_ifindex = int(ifindex);
    mreq.mr_type = PACKET_MR_PROMISC;
    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof(mreq));
    int buffer = 32 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer)) != 0)
    {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof(buffer)) != 0)
    {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
    }
    return fd;
}

/// Put one frame (virtio-net header first) into \p d's queue, or drop it.
void
Enqueue(Direction& d,
        const Options& opts,
        const uint8_t* frame,
        size_t len,
        Clock::time_point now,
        Clock::duration delay,
        double nsPerByte)
{
    ++d.c.rxFrames;
    d.c.rxBytes += len;
    if (len > d.slotSize || len < VNET_HDR_SIZE)
    {
        ++d.c.oversize; // a TCP GSO frame (TSO on the sender's veth): larger than any slot
        return;
    }
    bool data = opts.dropAny || IsDataFrame(frame + VNET_HDR_SIZE, len - VNET_HDR_SIZE, opts.ports);
    if (data)
    {
        ++d.c.dataFrames;
        // 53 random bits -> [0, 1).
        double u = double(d.rng() >> 11) * (1.0 / 9007199254740992.0);
        if (u < d.loss)
        {
            ++d.c.dropped;
            return;
        }
    }
    if (d.count == d.slots.size())
    {
        ++d.c.overflow;
        return;
    }
    size_t tail = (d.head + d.count) % d.slots.size();
    Slot& s = d.slots[tail];
    s.length = uint32_t(len);
    s.data = data;
    Clock::time_point due = now + delay;
    if (nsPerByte > 0)
    {
        // The frame leaves once the frames ahead of it have been serialized.
        due = std::max(due, d.lastDue) + std::chrono::nanoseconds(int64_t(nsPerByte * double(len)));
    }
    s.due = due;
    d.lastDue = due;
    std::memcpy(d.Frame(tail), frame, len);
    ++d.count;
}

/**
 * Split a UDP GSO train (a sender's UDP_SEGMENT send that crossed a veth whole) into the
 * datagrams a NIC would have put on the wire, and enqueue each: IPv4 total length and header
 * checksum and the UDP length rewritten, the UDP checksum set to 0 (none, valid for IPv4; the
 * RoCE ICRC covers the payload). \return false if \p frame is not such a train.
 */
bool
EnqueueUdpGsoTrain(Direction& d,
                   const Options& opts,
                   const uint8_t* frame,
                   size_t len,
                   Clock::time_point now,
                   Clock::duration delay,
                   double nsPerByte)
{
    constexpr uint8_t GSO_UDP_L4 = 5; // VIRTIO_NET_HDR_GSO_UDP_L4
    if (len < VNET_HDR_SIZE + 14 + 20 + 8 || frame[1] != GSO_UDP_L4)
    {
        return false;
    }
    size_t segment = size_t(frame[4]) | size_t(frame[5]) << 8; // gso_size, little-endian
    const uint8_t* eth = frame + VNET_HDR_SIZE;
    size_t ethLen = len - VNET_HDR_SIZE;
    if (segment == 0 || uint16_t(eth[12] << 8 | eth[13]) != 0x0800)
    {
        return false;
    }
    size_t ihl = size_t(eth[14] & 0x0f) * 4;
    size_t headers = 14 + ihl + 8;
    if (ihl < 20 || eth[14 + 9] != 17 || ethLen <= headers)
    {
        return false;
    }
    ++d.c.gsoTrains;
    uint8_t out[VNET_HDR_SIZE + 14 + 60 + 8 + 65536];
    for (size_t off = headers; off < ethLen; off += segment)
    {
        size_t part = std::min(segment, ethLen - off);
        std::memset(out, 0, VNET_HDR_SIZE);
        uint8_t* o = out + VNET_HDR_SIZE;
        std::memcpy(o, eth, headers);
        std::memcpy(o + headers, eth + off, part);
        uint8_t* ip = o + 14;
        uint16_t total = uint16_t(ihl + 8 + part);
        ip[2] = uint8_t(total >> 8);
        ip[3] = uint8_t(total);
        ip[10] = ip[11] = 0;
        uint32_t sum = 0;
        for (size_t k = 0; k < ihl; k += 2)
        {
            sum += uint32_t(ip[k] << 8 | ip[k + 1]);
        }
        while (sum >> 16)
        {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10] = uint8_t(~sum >> 8);
        ip[11] = uint8_t(~sum);
        uint8_t* udp = ip + ihl;
        uint16_t udpLen = uint16_t(8 + part);
        udp[4] = uint8_t(udpLen >> 8);
        udp[5] = uint8_t(udpLen);
        udp[6] = udp[7] = 0;
        Enqueue(d, opts, out, VNET_HDR_SIZE + headers + part, now, delay, nsPerByte);
    }
    return true;
}

/// Read what \p d's ingress socket holds into its queue. \return frames read.
unsigned
Receive(Direction& d, const Options& opts, Clock::duration delay, double nsPerByte)
{
    // Room for a GSO train (up to 64 KiB) behind its headers.
    constexpr size_t STAGING_SLOT = VNET_HDR_SIZE + 14 + 4 + 65536;
    static std::vector<uint8_t> staging(BATCH * STAGING_SLOT);
    mmsghdr msgs[BATCH];
    iovec iov[BATCH];
    for (unsigned i = 0; i < BATCH; ++i)
    {
        iov[i] = {staging.data() + i * STAGING_SLOT, STAGING_SLOT};
        std::memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int n = recvmmsg(d.rxFd, msgs, BATCH, MSG_DONTWAIT | MSG_TRUNC, nullptr);
    if (n <= 0)
    {
        return 0;
    }
    Clock::time_point now = Clock::now();
    for (int i = 0; i < n; ++i)
    {
        size_t len = msgs[i].msg_len;
        const uint8_t* frame = staging.data() + size_t(i) * STAGING_SLOT;
        if (len > STAGING_SLOT || (msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
        {
            ++d.c.rxFrames;
            ++d.c.oversize;
            continue;
        }
        if (!EnqueueUdpGsoTrain(d, opts, frame, len, now, delay, nsPerByte))
        {
            Enqueue(d, opts, frame, len, now, delay, nsPerByte);
        }
    }
    return unsigned(n);
}

/// Add the frames the kernel dropped on \p d's ingress socket since the last call (a full
/// receive buffer: the forwarder fell behind) to its counters.
void
CountKernelDrops(Direction& d)
{
    tpacket_stats stats{};
    socklen_t len = sizeof(stats);
    // Reading the statistics resets them.
    if (getsockopt(d.rxFd, SOL_PACKET, PACKET_STATISTICS, &stats, &len) == 0)
    {
        d.c.kernelDrops += stats.tp_drops;
    }
}

/// Send the frames of \p d that are due.
void
Transmit(Direction& d, Clock::time_point now)
{
    while (d.count > 0 && !d.txBlocked)
    {
        mmsghdr msgs[BATCH];
        iovec iov[BATCH];
        unsigned n = 0;
        while (n < BATCH && n < d.count)
        {
            size_t index = (d.head + n) % d.slots.size();
            const Slot& s = d.slots[index];
            if (s.due > now)
            {
                break;
            }
            iov[n] = {d.Frame(index), s.length};
            std::memset(&msgs[n], 0, sizeof(msgs[n]));
            msgs[n].msg_hdr.msg_iov = &iov[n];
            msgs[n].msg_hdr.msg_iovlen = 1;
            ++n;
        }
        if (n == 0)
        {
            return;
        }
        int sent = sendmmsg(d.txFd, msgs, n, MSG_DONTWAIT);
        if (sent < 0)
        {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            {
                d.txBlocked = true;
                return;
            }
            sent = 0; // this frame is refused (too large for the egress MTU, ...): drop it
            ++d.c.txErrors;
            d.head = (d.head + 1) % d.slots.size();
            --d.count;
            continue;
        }
        for (int i = 0; i < sent; ++i)
        {
            const Slot& s = d.slots[d.head];
            ++d.c.forwarded;
            d.c.forwardedData += s.data ? 1 : 0;
            d.c.txBytes += s.length;
            d.head = (d.head + 1) % d.slots.size();
            --d.count;
        }
        if (unsigned(sent) < n)
        {
            d.txBlocked = true; // a partial batch: the socket is full
            return;
        }
    }
}

void
PrintCounters(const char* prefix, const Direction& d, const Counters& c)
{
    std::printf("%s%s: rx %" PRIu64 " frames (%" PRIu64 " data)  forwarded %" PRIu64 " (%" PRIu64
                " data)  dropped %" PRIu64 "  overflow %" PRIu64 "  oversize %" PRIu64
                "  tx errors %" PRIu64 "  kernel drops %" PRIu64 "\n",
                prefix,
                d.name,
                c.rxFrames,
                c.dataFrames,
                c.forwarded,
                c.forwardedData,
                c.dropped,
                c.overflow,
                c.oversize,
                c.txErrors,
                c.kernelDrops);
}

Counters
Minus(const Counters& a, const Counters& b)
{
    Counters r;
    r.rxFrames = a.rxFrames - b.rxFrames;
    r.rxBytes = a.rxBytes - b.rxBytes;
    r.dataFrames = a.dataFrames - b.dataFrames;
    r.dropped = a.dropped - b.dropped;
    r.overflow = a.overflow - b.overflow;
    r.oversize = a.oversize - b.oversize;
    r.forwarded = a.forwarded - b.forwarded;
    r.forwardedData = a.forwardedData - b.forwardedData;
    r.txBytes = a.txBytes - b.txBytes;
    r.txErrors = a.txErrors - b.txErrors;
    r.gsoTrains = a.gsoTrains - b.gsoTrains;
    r.kernelDrops = a.kernelDrops - b.kernelDrops;
    return r;
}

/// Parse the command line. \return -1 to run, else the exit code (after printing).
int
ParseOptions(int argc, char** argv, Options& opts)
{
    using namespace metaroce::hil;
    double loss = 0;
    ToolOptions options(
        "metaroce-hil-forwarder",
        "usage: metaroce-hil-forwarder --a IFACE --b IFACE [--loss P] [--delay-us US] ...\n"
        "Forwards every Ethernet frame between two interfaces, with seeded drops of data-plane\n"
        "frames, added latency and an optional rate.");
    options.Add("a", "IFACE", "interface of side A (required)", Text(opts.a));
    options.Add("b", "IFACE", "interface of side B (required)", Text(opts.b));
    options.Add("loss", "P", "drop probability, both directions (default 0)", Real(loss, 0, 1));
    options.Add("loss-ab",
                "P",
                "drop probability A -> B (overrides --loss)",
                Real(opts.lossAb, 0, 1));
    options.Add("loss-ba",
                "P",
                "drop probability B -> A (overrides --loss)",
                Real(opts.lossBa, 0, 1));
    options.Add("delay-us",
                "US",
                "added one-way latency, 0..10000000 us (default 0)",
                Real(opts.delayUs, 0, 10e6));
    options.Add("rate-mbps",
                "MBPS",
                "serialization rate per direction, Mb/s (default 0: as fast as the kernel takes "
                "frames)",
                Real(opts.rateMbps, 0, UNBOUNDED));
    options.Add("seed", "N", "seed of the drop generators (default 1)", Number(opts.seed));
    options.Add("udp-port",
                "PORT[,PORT...]",
                "UDP destination ports of the data plane, whose frames may be dropped; repeat "
                "the option to add more (default 4791)",
                [&opts](const std::string& text) {
                    std::istringstream list(text);
                    std::string word;
                    std::set<uint16_t> ports;
                    while (std::getline(list, word, ','))
                    {
                        uint16_t port = 0;
                        if (!Number(port, 1)(word).empty())
                        {
                            return std::string("UDP ports 1..65535, separated by commas");
                        }
                        ports.insert(port);
                    }
                    if (ports.empty())
                    {
                        return std::string("UDP ports 1..65535, separated by commas");
                    }
                    opts.ports.insert(ports.begin(), ports.end());
                    return std::string();
                });
    options.AddFlag("drop-any", opts.dropAny, "drop from every frame (ARP, TCP, ...)");
    options.Add("queue-frames",
                "N",
                "delay-queue capacity per direction, 1..1048576 frames (a full queue drops: "
                "overflow) (default 4096)",
                Number(opts.queueFrames, 1, 1u << 20));
    options.Add("duration",
                "SECONDS",
                "seconds to run (default 0: until SIGINT or SIGTERM)",
                Real(opts.duration, 0, UNBOUNDED));
    options.Add("report",
                "SECONDS",
                "print the counters every this many seconds (default 0: only at the end)",
                Real(opts.report, 0, UNBOUNDED));
    options.Epilog("Exit status: 0 done, 1 error, 64 usage error.");
    int status = options.Parse(argc, argv);
    if (status >= 0)
    {
        return status;
    }
    if (!options.Given("a") || !options.Given("b"))
    {
        return options.UsageError("--a IFACE and --b IFACE are required");
    }
    if (opts.a == opts.b)
    {
        return options.UsageError("--a and --b must be different interfaces");
    }
    opts.lossAb = options.Given("loss-ab") ? opts.lossAb : loss;
    opts.lossBa = options.Given("loss-ba") ? opts.lossBa : loss;
    if (opts.ports.empty())
    {
        opts.ports.insert(4791);
    }
    return -1;
}

} // namespace

int
main(int argc, char** argv)
{
    Options opts;
    int code = ParseOptions(argc, argv, opts);
    if (code >= 0)
    {
        return code;
    }
    // Departures are timed to the microsecond: no timer slack.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    std::string error;
    uint32_t mtuA = 0;
    uint32_t mtuB = 0;
    int fdA = OpenPacketSocket(opts.a, mtuA, error);
    int fdB = fdA < 0 ? -1 : OpenPacketSocket(opts.b, mtuB, error);
    if (fdA < 0 || fdB < 0)
    {
        std::fprintf(stderr, "metaroce-hil-forwarder: %s\n", error.c_str());
        return 1;
    }
    size_t slotSize = std::max(mtuA, mtuB) + FRAME_OVERHEAD;
    Direction dirs[2];
    dirs[0].name = "a_to_b";
    dirs[0].rxFd = fdA;
    dirs[0].txFd = fdB;
    dirs[0].loss = opts.lossAb;
    dirs[1].name = "b_to_a";
    dirs[1].rxFd = fdB;
    dirs[1].txFd = fdA;
    dirs[1].loss = opts.lossBa;
    for (int i = 0; i < 2; ++i)
    {
        dirs[i].rng.seed(opts.seed * 2 + uint64_t(i));
        dirs[i].slotSize = slotSize;
        dirs[i].frames.resize(opts.queueFrames * slotSize);
        dirs[i].slots.resize(opts.queueFrames);
    }
    Clock::duration delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::micro>(opts.delayUs));
    double nsPerByte = opts.rateMbps > 0 ? 8e3 / opts.rateMbps : 0;

    // Signals are only delivered inside ppoll(), so a stop request is never missed.
    sigset_t block;
    sigset_t waitMask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &waitMask);
    sigdelset(&waitMask, SIGINT);
    sigdelset(&waitMask, SIGTERM);

    struct sigaction sa
    {
    };

    sa.sa_handler = OnSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    std::printf("forwarder ready: %s (mtu %u) <-> %s (mtu %u), loss %.4f / %.4f, delay %.0f us, "
                "rate %.0f Mb/s, seed %" PRIu64 "\n",
                opts.a.c_str(),
                mtuA,
                opts.b.c_str(),
                mtuB,
                opts.lossAb,
                opts.lossBa,
                opts.delayUs,
                opts.rateMbps,
                opts.seed);
    std::fflush(stdout);

    Clock::time_point start = Clock::now();
    Clock::time_point end = opts.duration > 0
                                ? start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(opts.duration))
                                : Clock::time_point::max();
    Clock::duration reportEvery =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.report));
    Clock::time_point nextReport = opts.report > 0 ? start + reportEvery : Clock::time_point::max();
    while (!g_stop)
    {
        Clock::time_point now = Clock::now();
        if (now >= end)
        {
            break;
        }
        for (auto& d : dirs)
        {
            // Read while there is room, a few batches at most, so that departures stay timely.
            for (int round = 0; round < 4 && Receive(d, opts, delay, nsPerByte) == BATCH; ++round)
            {
            }
        }
        now = Clock::now();
        for (auto& d : dirs)
        {
            Transmit(d, now);
        }
        if (now >= nextReport)
        {
            for (auto& d : dirs)
            {
                CountKernelDrops(d);
            }
            double t = std::chrono::duration<double>(now - start).count();
            for (auto& d : dirs)
            {
                char prefix[32];
                std::snprintf(prefix, sizeof(prefix), "[%8.2f s] ", t);
                PrintCounters(prefix, d, Minus(d.c, d.lastReport));
                d.lastReport = d.c;
            }
            std::fflush(stdout);
            nextReport += reportEvery;
        }
        // Sleep until input, a writable egress, the next departure, the next report or the end.
        Clock::time_point wake = std::min(end, nextReport);
        pollfd fds[2];
        fds[0] = {fdA, 0, 0};
        fds[1] = {fdB, 0, 0};
        for (int i = 0; i < 2; ++i)
        {
            Direction& d = dirs[i];
            fds[i].events |= POLLIN;
            if (d.count > 0)
            {
                if (d.txBlocked)
                {
                    fds[1 - i].events |= POLLOUT;
                }
                else
                {
                    wake = std::min(wake, d.slots[d.head].due);
                }
            }
        }
        int64_t waitNs =
            wake == Clock::time_point::max()
                ? -1
                : std::max<int64_t>(
                      0,
                      std::chrono::duration_cast<std::chrono::nanoseconds>(wake - Clock::now())
                          .count());
        timespec ts{time_t(waitNs / 1000000000), long(waitNs % 1000000000)};
        int r = ppoll(fds, 2, waitNs < 0 ? nullptr : &ts, &waitMask);
        if (r < 0 && errno != EINTR)
        {
            std::perror("metaroce-hil-forwarder: ppoll");
            return 1;
        }
        for (int i = 0; i < 2; ++i)
        {
            if (fds[1 - i].revents & (POLLOUT | POLLERR))
            {
                dirs[i].txBlocked = false;
            }
        }
    }

    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (auto& d : dirs)
    {
        CountKernelDrops(d);
    }
    std::printf("---- metaroce-hil-forwarder summary (%.3f s) ----\n", seconds);
    for (auto& d : dirs)
    {
        PrintCounters("", d, d.c);
    }
    std::printf("RESULT program=metaroce-hil-forwarder seconds=%.3f", seconds);
    for (auto& d : dirs)
    {
        std::printf(" %s_rx=%" PRIu64 " %s_data=%" PRIu64 " %s_forwarded=%" PRIu64
                    " %s_forwarded_data=%" PRIu64 " %s_dropped=%" PRIu64 " %s_overflow=%" PRIu64
                    " %s_oversize=%" PRIu64 " %s_tx_errors=%" PRIu64 " %s_gso_trains=%" PRIu64
                    " %s_kernel_drops=%" PRIu64 " %s_queued=%zu",
                    d.name,
                    d.c.rxFrames,
                    d.name,
                    d.c.dataFrames,
                    d.name,
                    d.c.forwarded,
                    d.name,
                    d.c.forwardedData,
                    d.name,
                    d.c.dropped,
                    d.name,
                    d.c.overflow,
                    d.name,
                    d.c.oversize,
                    d.name,
                    d.c.txErrors,
                    d.name,
                    d.c.gsoTrains,
                    d.name,
                    d.c.kernelDrops,
                    d.name,
                    d.count);
    }
    std::printf("\n");
    std::fflush(stdout);
    close(fdA);
    close(fdB);
    return 0;
}
