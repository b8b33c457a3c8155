/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_FRAME_PORT_H
#define METAROCE_HIL_FRAME_PORT_H

#include "metaroce-datagram.h"
#include "metaroce-encap.h"
#include "metaroce-transport.h" // TxDatagram

#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <string>

/**
 * \file
 * Frame ports: where the daemon's transport datagrams meet a real network. One small
 * interface, implemented by plain UDP sockets, AF_PACKET on an interface, and wrappers that
 * inject faults or capture to pcap. All ports run on the daemon's one io_context thread.
 */

namespace metaroce
{
namespace hil
{

/// Outcome of FramePort::Send().
enum class SendStatus : uint8_t
{
    SENT,        //!< handed to the kernel (or deliberately dropped by a fault wrapper)
    WOULD_BLOCK, //!< the kernel queue is full: wait with AsyncWaitWritable() and retry
    FAILED,      //!< cannot be sent (no route, no MAC, too large): counted and dropped
};

/// What every port counts.
struct PortCounters
{
    uint64_t txFrames{0};        //!< datagrams sent
    uint64_t txBytes{0};         //!< datagram bytes sent (UDP payload)
    uint64_t txFailed{0};        //!< datagrams that could not be sent
    uint64_t rxFrames{0};        //!< datagrams received and handed up
    uint64_t rxBytes{0};         //!< their bytes
    uint64_t rxMalformed{0};     //!< frames that failed to parse (raw mode) or were truncated
    uint64_t rxIgnored{0};       //!< well-formed frames not for us (other protocols, ports, hosts)
    uint64_t faultDropped{0};    //!< fault wrapper: dropped (random or burst)
    uint64_t faultDuplicated{0}; //!< fault wrapper: sent twice
    uint64_t faultReordered{0};  //!< fault wrapper: held back and sent late
    /// Datagrams the kernel dropped on the receive socket before the port read them (its
    /// buffer or ring was full: the process did not keep up), where the port can tell (UDP and
    /// raw mode).
    uint64_t rxKernelDrops{0};
    /// Datagrams the port marked CE because its kernel receive queue was deeper than the
    /// --backlog-ecn threshold (metaroce-hil-backlog-ecn.h).
    uint64_t rxBacklogMarked{0};
    /// AF_XDP shards: frames this port received for a QPN of another shard and passed to it.
    uint64_t rxHandedOff{0};
    /// AF_XDP shards: such frames dropped because the hand-off ring to their shard was full.
    uint64_t rxHandoffDrops{0};
};

/**
 * A place that carries transport datagrams (UDP payloads) with their DatagramMeta.
 *
 * Receiving is a loop the port runs after Start(): for each datagram it calls the receive
 * handler (the bytes are only valid during the call), and after each batch of datagrams read
 * in one go it calls the batch handler, where the daemon pumps the engine once.
 */
class FramePort
{
  public:
    /// Called for every received datagram.
    using ReceiveHandler = std::function<void(const DatagramMeta&, const uint8_t*, size_t)>;
    /// Called after a batch of received datagrams.
    using BatchHandler = std::function<void()>;
    /// Called when the port may accept sends again (or with an error when closed).
    using WritableHandler = std::function<void(const boost::system::error_code&)>;

    virtual ~FramePort() = default;

    /// Start receiving.
    virtual void Start(ReceiveHandler onDatagram, BatchHandler onBatch) = 0;
    /**
     * Send one datagram to tx.meta.dstIp. A batching port may only queue it (SENT) and hand it
     * to the kernel in the next Flush().
     */
    virtual SendStatus Send(const TxDatagram& tx) = 0;

    /**
     * A buffer the next datagram may be written into, so that Send() of a datagram in it
     * queues it without a copy (a batching port's next slot). \param[out] capacity its size.
     * \return nullptr if the port has none (Send() copies). The next call of Send() or
     * ReleaseTxBuffer() ends the reservation.
     */
    virtual uint8_t* ReserveTxBuffer(size_t& capacity)
    {
        capacity = 0;
        return nullptr;
    }

    /// Give back the buffer of ReserveTxBuffer() unused.
    virtual void ReleaseTxBuffer()
    {
    }

    /**
     * Hand what Send() queued to the kernel (one system call per socket). The host calls it
     * after each pump run. \return WOULD_BLOCK if some stay queued because the kernel queue is
     * full (wait with AsyncWaitWritable(), then flush again), else SENT.
     */
    virtual SendStatus Flush()
    {
        return SendStatus::SENT;
    }

    /**
     * Read, now and without waiting, what the kernel holds for this port, calling the receive
     * and batch handlers as the receive loop does. The host calls it before it handles an
     * expired engine timer, so that an acknowledgement that has arrived but was not read yet
     * (the process was not scheduled) counts before the timeout does.
     */
    virtual void PollReceive()
    {
    }

    /**
     * Mark CE on datagrams read while the kernel receive queue held more than \p threshold
     * (0: never), where the port can tell (UDP and raw mode; metaroce-hil-backlog-ecn.h).
     */
    virtual void SetBacklogEcn(uint32_t /*threshold*/)
    {
    }

    /// \return true if received frames reach the program a block at a time, held back until
    /// the block fills or a timer retires it (TPACKET_V3): see AutoBacklogEcn.
    virtual bool DeliversInBlocks() const
    {
        return false;
    }

    /// Call \p handler once the port may accept sends again.
    virtual void AsyncWaitWritable(WritableHandler handler) = 0;
    /// Stop receiving and release the sockets (pending handlers get operation_aborted).
    virtual void Close() = 0;
    /// \return the counters of this port and of the ports it wraps.
    virtual PortCounters Counters() const = 0;
    /// \return a one-line description for logs ("udp 10.0.0.1:4791", "raw veth0", ...).
    virtual std::string Describe() const = 0;

    /// \return the port's MAC address (all zeros where there is none, as in UDP mode).
    virtual MacAddress LocalMac() const
    {
        return MacAddress();
    }

    /**
     * Learn what the control plane says about the peer \p ip: its MAC address (raw ports use
     * it when the neighbour table has no entry), the UDP port it receives datagrams on (UDP
     * ports send there instead of 4791), and whether it takes UDP GSO trains: a raw peer on
     * the far end of a veth receives a train unsegmented, as one oversized frame whose ICRC
     * fails, so UDP ports send such a peer datagram by datagram.
     */
    virtual void LearnPeer(uint32_t /*ip*/,
                           const MacAddress& /*mac*/,
                           uint16_t /*dataPort*/,
                           bool /*takesTrains*/)
    {
    }
};

/// Adds the counts of \p b to \p a.
void AddCounters(PortCounters& a, const PortCounters& b);

/**
 * A MAC address derived from an IPv4 address (02:00:a:b:c:d, locally administered), used for
 * the Ethernet header of captured frames where the port has no real MAC.
 */
MacAddress SyntheticMac(uint32_t ip);

/// \return "aa:bb:cc:dd:ee:ff".
std::string MacToString(const MacAddress& mac);

/// Parse "aa:bb:cc:dd:ee:ff". \return false if malformed.
bool ParseMac(const std::string& text, MacAddress& mac);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_FRAME_PORT_H
