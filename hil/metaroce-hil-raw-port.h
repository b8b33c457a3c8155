/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_RAW_PORT_H
#define METAROCE_HIL_RAW_PORT_H

#include "metaroce-hil-backlog-ecn.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-handoff.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-packet-ring.h"
#include "metaroce-hil-tx-batch.h"
#include "metaroce-hil-xdp.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <map>
#include <memory>
#include <vector>

/**
 * \file
 * The raw frame port: whole Ethernet frames on an interface through an AF_PACKET socket
 * (veth or physical NIC), built and parsed by the engine's shared EncapsulateFrame() /
 * ParseFrame(), so the bytes on the wire are exactly those of the simulator and of the pcap
 * files, ECN bits included in both directions.
 *
 * Needs CAP_NET_RAW. A classic BPF filter passes only IPv4/UDP to the data port; frames the
 * port sends itself are ignored (PACKET_IGNORE_OUTGOING). A UDP socket bound to the data port
 * with a tiny receive buffer keeps the kernel's own stack from answering our datagrams with
 * ICMP port-unreachable errors. The destination MAC of a peer comes from --peer-mac, else the
 * kernel neighbour table of the interface (/proc/net/arp), else the MAC the peer announced on
 * the control plane.
 */

namespace metaroce
{
namespace hil
{

/// How a RawFramePort moves frames.
enum class RawIoMode : uint8_t
{
    AUTO,    //!< PACKET_MMAP rings (TPACKET_V2), else recvmmsg()/sendmmsg() with a warning
    RING,    //!< TPACKET_V2 rings (frame by frame) or an error
    RING_V3, //!< TPACKET_V3 rings (receive blocks) or an error
    XDP,     //!< an AF_XDP socket (XdpSocket) or an error
    SOCKET,  //!< recvmmsg()/sendmmsg()
};

/// Parse "auto", "ring", "ring-v3", "xdp" or "socket". \return false if it is none of them.
bool ParseRawIoMode(const std::string& text, RawIoMode& mode);

/// Whether a PACKET_MMAP transmit ring has the kernel copy each frame (PacketRingConfig::txCopy).
enum class RingTxCopy : uint8_t
{
    AUTO, //!< on a veth, which would copy the ring's pages anyway; off elsewhere
    ON,   //!< always copy
    OFF,  //!< send from the ring's pages (no copy on a NIC that sends them as they are)
};

/// Parse "auto", "on" or "off". \return false if it is none of them.
bool ParseRingTxCopy(const std::string& text, RingTxCopy& mode);

/// Transmit slots of a PACKET_MMAP ring on a veth: few enough to stay in the CPU's cache (the
/// kernel gives each slot back within the send() that sent it, docs/hil.md).
constexpr uint32_t VETH_TX_RING_SLOTS = 32;

/// What the AF_XDP ports of one process's shards share (RawIoMode::XDP with shards > 1).
struct XdpShardGroup
{
    std::shared_ptr<XdpProgram> program;   //!< the XDP program attached to the device
    std::shared_ptr<ShardHandoff> handoff; //!< frames a shard received for another shard
};

/// Settings of a RawFramePort.
struct RawPortConfig
{
    std::string device;               //!< interface name, e.g. "eth0" or "veth0"
    uint32_t localIp{0};              //!< engine address (0 = the interface's first address)
    uint16_t dataPort{ROCE_UDP_PORT}; //!< UDP destination port of our datagrams
    bool staticPeerMac{false};        //!< use peerMac for every destination
    MacAddress peerMac;               //!< the static peer (or gateway) MAC
    int socketBufferBytes{8 << 20};   //!< SO_RCVBUF / SO_SNDBUF request
    /// Frames queued by Send() before a Flush() (1: every Send() is one sendto()).
    uint32_t txBatch{64};
    /// SO_BUSY_POLL on the packet socket, microseconds (0: off; see docs/hil.md).
    uint32_t busyPollUs{0};
    RawIoMode io{RawIoMode::AUTO};  //!< rings or socket calls
    XdpMode xdpMode{XdpMode::AUTO}; //!< RawIoMode::XDP: how the AF_XDP socket attaches
    uint32_t ringRetireMs{1};       //!< TPACKET_V3: hand over a partly filled block after this
    RingTxCopy ringTxCopy{RingTxCopy::AUTO}; //!< rings: the kernel copies each frame on send
    /// Mark CE on frames read while the socket or ring held more than this many (0: off).
    uint32_t backlogEcn{BACKLOG_ECN_DEFAULT};
    /**
     * Ports of one process on the same device (the shards of --threads): the group's size.
     * Their packet sockets join one PACKET_FANOUT group whose classic BPF program picks the
     * member by the BTH's destination QPN, (QPN - FIRST_QPN) mod shards, as the UDP port's
     * SO_REUSEPORT group does. Open them in shardIndex order. 1: no group. With
     * RawIoMode::XDP shard i binds its AF_XDP socket to queue i of the device (which needs
     * \c shards queues), and a frame a shard receives for another shard's QPN goes to that
     * shard through a hand-off ring (ShardHandoff).
     */
    uint32_t shards{1};
    uint32_t shardIndex{0}; //!< this port's place in the group (see shards)
    uint32_t fanoutId{0};   //!< shardIndex > 0: the group (FanoutId() of shard 0's port)
    /// RawIoMode::XDP, shardIndex > 0: the group (XdpGroup() of shard 0's port).
    std::shared_ptr<XdpShardGroup> xdpGroup;
};

/// Transport datagrams in Ethernet frames on an AF_PACKET socket.
class RawFramePort : public FramePort
{
  public:
    /**
     * Open the packet socket on cfg.device.
     * \param[out] error why it failed (a missing CAP_NET_RAW is named as such)
     * \return the port, or nullptr
     */
    static std::unique_ptr<RawFramePort> Open(boost::asio::io_context& io,
                                              const HostClock& clock,
                                              const RawPortConfig& cfg,
                                              std::string& error);

    ~RawFramePort() override;

    /// \return the engine address (cfg.localIp or the interface's address).
    uint32_t LocalIp() const
    {
        return m_cfg.localIp;
    }

    /// \return the interface MTU.
    uint32_t Mtu() const
    {
        return m_mtu;
    }

    /// \return the PACKET_FANOUT group of the shards (with RawPortConfig::shards > 1).
    uint32_t FanoutId() const
    {
        return m_cfg.fanoutId;
    }

    /// \return what the AF_XDP shards share (RawIoMode::XDP with shards > 1), else nullptr.
    const std::shared_ptr<XdpShardGroup>& XdpGroup() const
    {
        return m_cfg.xdpGroup;
    }

    void Start(ReceiveHandler onDatagram, BatchHandler onBatch) override;
    SendStatus Send(const TxDatagram& tx) override;
    /**
     * With rings: the next transmit slot past the frame's headers, so that the engine writes
     * the datagram where the kernel takes the frame from and Send() only adds the headers.
     */
    uint8_t* ReserveTxBuffer(size_t& capacity) override;
    void ReleaseTxBuffer() override;
    SendStatus Flush() override;
    void PollReceive() override;

    void SetBacklogEcn(uint32_t threshold) override
    {
        m_backlogEcn.SetThreshold(threshold);
    }

    void AsyncWaitWritable(WritableHandler handler) override;
    void Close() override;
    PortCounters Counters() const override;
    std::string Describe() const override;

    MacAddress LocalMac() const override
    {
        return m_mac;
    }

    void LearnPeer(uint32_t ip,
                   const MacAddress& mac,
                   uint16_t dataPort,
                   bool takesTrains) override;

    /// \return true if frames move through PACKET_MMAP rings.
    bool UsesRings() const
    {
        return m_ring != nullptr;
    }

    bool DeliversInBlocks() const override
    {
        return m_ring != nullptr && m_cfg.io == RawIoMode::RING_V3;
    }

  private:
    /// (Open() does the set-up; \p handoffWakeFd: AF_XDP shards' wake-up, the port's, or -1.)
    RawFramePort(boost::asio::io_context& io,
                 const HostClock& clock,
                 const RawPortConfig& cfg,
                 int fd,
                 int guardFd,
                 int ifindex,
                 const MacAddress& mac,
                 uint32_t mtu,
                 std::unique_ptr<FrameRing> ring,
                 int handoffWakeFd);

    /// \return the MAC of \p ip, or nullptr if unknown.
    const MacAddress* Resolve(uint32_t ip);
    void DoReceive();
    void OnReceive(const boost::system::error_code& error);
    /// Read up to \p maxRounds batches that the kernel holds, without waiting.
    void ReceiveNow(int maxRounds);
    /// ReceiveNow() through recvmmsg(). \return true if a datagram was handed up.
    bool ReceiveBatches(int maxRounds);
    /// Hand up one received frame of \p len bytes. \return true if it was a datagram for us.
    bool HandleFrame(const uint8_t* data, size_t len, bool truncated);
    /**
     * AF_XDP shards: pass a frame whose QPN another shard owns to that shard's hand-off ring.
     * \return true if the frame was another shard's (handed off or dropped)
     */
    bool HandOff(const uint8_t* data, size_t len);
    /// Wake the shards HandOff() gave frames since the last call.
    void WakeHandoffTargets();
    /**
     * Hand up up to \p maxFrames frames from each ring of the frames other shards handed to
     * this one.
     * \param[out] emptied false if a ring may hold more
     * \return true if any was a datagram for us
     */
    bool DrainHandoffs(size_t maxFrames, bool& emptied);
    /// Wait for another shard's wake-up (the eventfd).
    void DoHandoffWait();
    /// Queue the frame in m_txBuffer in the transmit ring.
    SendStatus SendToRing(size_t len, uint64_t datagramLen);
    /// Mark the ring's current slot, holding a frame of \p len bytes, ready to send.
    SendStatus CommitRingSlot(size_t len, uint64_t datagramLen);
    /// Add the kernel's count of frames it dropped for want of room to the counters.
    void ReadKernelDrops() const;

    const HostClock& m_clock;                     //!< for rate-limited logs
    RawPortConfig m_cfg;                          //!< settings
    boost::asio::posix::stream_descriptor m_sock; //!< the packet socket
    int m_fd;                                     //!< its descriptor (for const readers)
    int m_guardFd;                                //!< UDP socket holding the data port
    int m_ifindex;                                //!< interface index
    MacAddress m_mac;                             //!< interface MAC
    uint32_t m_mtu;                               //!< interface MTU
    std::map<uint32_t, MacAddress> m_neighbours;  //!< resolved peers
    std::map<uint32_t, MacAddress> m_announced;   //!< MACs learned from the control plane
    ReceiveHandler m_onDatagram;                  //!< receive handler
    BatchHandler m_onBatch;                       //!< batch handler
    mutable PortCounters m_counters;              //!< counters (kernel drops read when asked)
    std::vector<uint8_t> m_rxBuffer;              //!< recvmmsg() buffers
    std::vector<uint8_t> m_txBuffer;              //!< one frame
    uint8_t* m_reservedSlot{nullptr};             //!< ring slot of ReserveTxBuffer()
    TxBatch m_batch;                              //!< frames Send() queued
    std::unique_ptr<FrameRing> m_ring;            //!< the rings (nullptr: socket calls)
    BacklogEcn m_backlogEcn;                      //!< CE on a deep socket queue or ring
    uint64_t m_ringPendingBytes{0};               //!< datagram bytes in unflushed ring slots
    bool m_closed{false};                         //!< Close() was called
    RateLimiter m_errorLog;                       //!< error lines
    RateLimiter m_malformedLog;                   //!< malformed-frame lines
    std::shared_ptr<ShardHandoff> m_handoff;      //!< AF_XDP shards: the hand-off rings
    boost::asio::posix::stream_descriptor m_handoffWake; //!< this shard's eventfd (a dup)
    uint64_t m_wakeTargets{0};                           //!< shards to wake (bit i: shard i)
};

/**
 * Look \p ip up in the kernel neighbour table (/proc/net/arp) of \p device.
 * \return true with \p mac set if a complete entry exists
 */
bool LookupNeighbour(const std::string& device, uint32_t ip, MacAddress& mac);

/**
 * The queues of \p device that an AF_XDP socket can bind: the smaller of its receive and
 * transmit queue counts (ETHTOOL_GCHANNELS; a device without it counts as one queue).
 * \param fd any socket (for the ioctl)
 * \param[out] detail the counts, for messages ("rx 2, tx 2")
 */
uint32_t DeviceQueueCount(int fd, const std::string& device, std::string& detail);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_RAW_PORT_H
