/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_UDP_PORT_H
#define METAROCE_HIL_UDP_PORT_H

#include "metaroce-hil-backlog-ecn.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-tx-batch.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

/**
 * \file
 * The UDP frame port: transport datagrams as payloads of ordinary UDP sockets. Needs no
 * privileges and crosses any IP network.
 *
 * - One receive socket bound to the data port (4791) with IP_PKTINFO (the destination
 *   address) and IP_RECVTOS (the ECN and DSCP bits of the received packet).
 * - One send socket per UDP source port the engine uses (the path entropy that switches hash
 *   for ECMP), created on first use, bound with SO_REUSEADDR to (local address, source port);
 *   the ECN/DSCP byte is set per datagram with an IP_TOS control message, and DF is set
 *   (IP_PMTUDISC_DO) so that datagrams are never fragmented.
 * - Batched I/O: recvmmsg() of up to 32 datagrams per call; Send() queues (up to 64) and
 *   Flush() hands the queue to the kernel with one sendmmsg() per socket in use.
 *
 * The kernel writes its own IPv4 identification and checksum; the engine's ICRC covers the
 * canonical headers rebuilt from the DatagramMeta on both sides, so two of our daemons agree
 * (a hardware RoCE NIC would not accept these packets' ICRC).
 *
 * A socket cannot send from UDP source port 0. The engine emits a few datagrams with source
 * port 0 (MetaRoCE probe replies, see docs/hil.md "Engine issues"); they leave from the data
 * port's socket with their ICRC recomputed for that port.
 */

namespace metaroce
{
namespace hil
{

/**
 * The receive socket's buffer by default (--rx-buffer): RoCEv2 keeps up to 2,048 packets of
 * 4 KiB in flight by default (128 messages of 64 KiB), 8.6 MB, which overflowed the 8 MB a
 * 4 MiB request gives (34-82 kernel drops per 3 s on the veth pair, each answered with a
 * go-back-N resend of 2,000-3,000 packets); 16 MiB (32 MiB of kernel accounting) left none.
 */
constexpr int UDP_RECEIVE_BUFFER_DEFAULT = 16 << 20;

/// Settings of a UdpFramePort.
struct UdpPortConfig
{
    uint32_t localIp{0};              //!< address to bind and to send from (required)
    uint16_t dataPort{ROCE_UDP_PORT}; //!< port to receive datagrams on
    int socketBufferBytes{4 << 20};   //!< SO_SNDBUF request of the send sockets
    /// SO_RCVBUF request of the receive socket: SO_RCVBUFFORCE where allowed (CAP_NET_ADMIN),
    /// else up to net.core.rmem_max. It should hold what the peers may have in flight.
    int receiveBufferBytes{UDP_RECEIVE_BUFFER_DEFAULT};
    bool icrc{true}; //!< the engine computes ICRCs (see Send())
    /// Datagrams queued by Send() before a Flush() (1: every Send() is one sendmsg()).
    uint32_t txBatch{64};
    /// SO_BUSY_POLL on the receive socket, microseconds (0: off; see docs/hil.md).
    uint32_t busyPollUs{0};
    /// UDP GSO on send and UDP GRO on receive (see docs/hil.md: not through the forwarder).
    bool gso{false};
    /// Mark CE on datagrams read while the socket held more than this many (0: off).
    uint32_t backlogEcn{BACKLOG_ECN_DEFAULT};
    /**
     * Ports of one process that share dataPort (the daemon's shards, --threads): the group's
     * size. The kernel steers each datagram to the port of its destination QPN's class,
     * (QPN - FIRST_QPN) mod shards (EndpointConfig::qpnStride), by a classic BPF program on
     * the SO_REUSEPORT group, as a NIC steers by QPN. Open the ports in shardIndex order.
     * 1: a port of its own.
     */
    uint32_t shards{1};
    uint32_t shardIndex{0}; //!< this port's place in the group (see shards)
};

/**
 * Attach to UDP socket \p fd, bound with SO_REUSEPORT, the program that steers a datagram to
 * the group's socket (QPN - FIRST_QPN) mod \p shards by its BTH's destination QPN.
 * \return "" or why not.
 */
std::string AttachQpnSteering(int fd, uint32_t shards);

/// Transport datagrams over UDP sockets.
class UdpFramePort : public FramePort
{
  public:
    /**
     * Open the receive socket.
     * \param[out] error why it failed
     * \return the port, or nullptr
     */
    static std::unique_ptr<UdpFramePort> Open(boost::asio::io_context& io,
                                              const HostClock& clock,
                                              const UdpPortConfig& cfg,
                                              std::string& error);

    ~UdpFramePort() override;

    void Start(ReceiveHandler onDatagram, BatchHandler onBatch) override;
    SendStatus Send(const TxDatagram& tx) override;
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
    void LearnPeer(uint32_t ip,
                   const MacAddress& mac,
                   uint16_t dataPort,
                   bool takesTrains) override;
    PortCounters Counters() const override;
    std::string Describe() const override;

  private:
    UdpFramePort(boost::asio::io_context& io,
                 const HostClock& clock,
                 const UdpPortConfig& cfg,
                 int fd);

    /// The send socket of \p srcPort, created on first use. \return nullptr on failure.
    boost::asio::posix::stream_descriptor* SocketFor(uint16_t srcPort);
    void DoReceive();
    void OnReceive(const boost::system::error_code& error);
    /// Read up to \p maxRounds batches that the kernel holds, without waiting.
    void ReceiveNow(int maxRounds);
    /// Count and log a datagram the kernel refused with \p err.
    void SendFailed(int err, uint32_t dstIp, size_t length);

    boost::asio::io_context& m_io;              //!< the daemon's context
    const HostClock& m_clock;                   //!< for rate-limited logs
    UdpPortConfig m_cfg;                        //!< settings
    boost::asio::posix::stream_descriptor m_rx; //!< receive socket
    std::unordered_map<uint16_t, std::unique_ptr<boost::asio::posix::stream_descriptor>>
        m_tx;                                 //!< send sockets by source port
    std::map<uint32_t, uint16_t> m_peerPorts; //!< data port by peer address
    TxBatch::Entry* m_reserved{nullptr};      //!< the slot ReserveTxBuffer() handed out
    std::set<uint32_t> m_noTrains;            //!< peers sent datagram by datagram (LearnPeer)
    boost::asio::posix::stream_descriptor* m_blocked{nullptr}; //!< socket that said EAGAIN
    ReceiveHandler m_onDatagram;                               //!< receive handler
    BatchHandler m_onBatch;                                    //!< batch handler
    PortCounters m_counters;                                   //!< counters
    std::vector<uint8_t> m_rxBuffers;                          //!< recvmmsg buffers
    std::vector<uint8_t> m_scratch;                            //!< re-signed port-0 datagrams
    TxBatch m_batch;                                           //!< datagrams Send() queued
    BacklogEcn m_backlogEcn;                                   //!< CE on a deep socket queue
    uint64_t m_portZero{0};                                    //!< datagrams with source port 0
    bool m_closed{false};                                      //!< Close() was called
    RateLimiter m_errorLog;                                    //!< send error lines
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_UDP_PORT_H
