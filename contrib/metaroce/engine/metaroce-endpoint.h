/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ENDPOINT_H
#define METAROCE_ENDPOINT_H

#include "metaroce-transport.h"

#include <memory>
#include <queue>
#include <string>
#include <vector>

/**
 * \file
 * The sans-I/O engine of one NIC: connections of any transport, memory regions, a fair
 * transmit scheduler across connections, one timer, and a completion queue.
 *
 * The host drives it with the same "pump" after every input:
 * \code
 *   endpoint.HandleDatagram(now, meta, bytes, len);   // or PostSend / HandleTimeout
 *   while (endpoint.PollTransmit(now, tx)) send(tx);
 *   while (endpoint.PollCompletion(wc)) deliver(wc);
 *   rearm_timer(endpoint.NextTimeout());
 * \endcode
 * The engine never reads a clock, never does I/O and never calls back into the host.
 */

namespace metaroce
{

/**
 * First connection number handed out. InfiniBand reserves QP 0 (SMI) and QP 1 (GSI); a peer
 * or Wireshark reads a packet for QP 1 as a management datagram.
 */
constexpr uint32_t FIRST_QPN = 2;

/// What HandleDatagram did with a datagram.
enum class RxStatus : uint8_t
{
    ACCEPTED,           //!< handed to its connection
    MALFORMED,          //!< failed to parse
    BAD_ICRC,           //!< ICRC mismatch
    UNKNOWN_CONNECTION, //!< destination QP does not exist
    WRONG_SOURCE,       //!< source address is not the connection's peer
    WRONG_TRANSPORT,    //!< opcode of another transport
    NOT_CONNECTED,      //!< connection not connected yet
};

/// \return the name of \p status.
const char* RxStatusName(RxStatus status);

/// One NIC's worth of protocol engine.
class Endpoint
{
  public:
    /// Create an endpoint.
    explicit Endpoint(const EndpointConfig& cfg);
    ~Endpoint();
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;

    /// \return the configuration.
    const EndpointConfig& Config() const;

    /**
     * Register memory. \p base may be nullptr for a virtual region (see MemoryRegion).
     * \param iova address peers use; by default the host pointer value
     * \return the region; lkey == 0 if the arguments are invalid
     */
    MemoryRegion RegisterMemory(void* base, uint64_t length, uint32_t access);
    /// \copydoc RegisterMemory(void*,uint64_t,uint32_t)
    MemoryRegion RegisterMemory(void* base, uint64_t length, uint32_t access, uint64_t iova);
    /// Deregister a region. \return false if \p lkey is unknown.
    bool DeregisterMemory(uint32_t lkey);

    /**
     * Create a connection of the transport cfg.transport.
     * \param[out] qpn its local number
     * \param[out] why reason when INVALID_ARGUMENT is returned (may be nullptr)
     */
    PostStatus CreateConnection(const ConnectionConfig& cfg,
                                uint32_t& qpn,
                                std::string* why = nullptr);
    /// Bind connection \p qpn to the peer connection \p remoteQpn at \p remoteIp.
    PostStatus Connect(uint32_t qpn, uint32_t remoteIp, uint32_t remoteQpn);
    /**
     * Destroy a connection (its outstanding work is dropped). Its place counts no longer
     * against maxConnections; its QPN is handed out again only when the table is full, the
     * longest-free first, so late packets of a destroyed connection rarely meet a new one.
     * \return false if unknown
     */
    bool DestroyConnection(uint32_t qpn);

    /**
     * Put connection \p qpn in the error state (Verbs: ibv_modify_qp to ERR): its outstanding
     * send and receive work requests complete with WR_FLUSH_ERR (PollCompletion), later posts
     * fail with CONNECTION_ERROR, and it sends nothing more.
     * \return false if unknown
     */
    bool FlushConnection(Time now, uint32_t qpn);

    /// Post a send work request on connection \p qpn.
    PostStatus PostSend(Time now, uint32_t qpn, const SendWr& wr);
    /// Post a receive work request on connection \p qpn.
    PostStatus PostRecv(Time now, uint32_t qpn, const RecvWr& wr);

    /// Process a received datagram (BTH to ICRC) with its IP/UDP metadata.
    RxStatus HandleDatagram(Time now, const DatagramMeta& meta, const uint8_t* data, size_t len);
    /**
     * Produce the next datagram to send, round robin across connections that may send.
     * out.buffer must hold MaxDatagramSize(mtu) bytes for the largest mtu in use.
     * \return false if nothing may be sent now
     */
    bool PollTransmit(Time now, TxDatagram& out);
    /// \return when HandleTimeout must be called next at the latest (it may find nothing due;
    /// TIME_INFINITE if never).
    Time NextTimeout();
    /// Process every deadline due at \p now.
    void HandleTimeout(Time now);
    /// Pop the oldest completion. \return false if none.
    bool PollCompletion(Completion& out);

    /// \return endpoint-wide counters.
    const CounterSet& Counters() const;
    /// \return connection \p qpn, or nullptr.
    const TransportConnection* GetConnection(uint32_t qpn) const;
    /// \return the number of live connections.
    size_t ConnectionCount() const;
    /// \return the number of registered memory regions.
    size_t RegionCount() const;
    /// \return the bytes of the registered memory regions.
    uint64_t RegisteredBytes() const;
    /**
     * Check every connection's derived state against its source (TransportConnection::
     * CheckInvariants). \return "" if all agree, else the first disagreement with its QPN;
     * with EndpointConfig::checkInvariants, first any disagreement found earlier where the
     * state was read. For tests and debugging: a pass over all connection state.
     */
    std::string CheckInvariants() const;
    /**
     * Set the host delay: how late, beyond the path's round trip, an acknowledgement may
     * come because a host did not run (a software endpoint's scheduling delay, its own and
     * its peers'). Every retransmission timer armed from now on, on every connection of
     * either transport, waits \p delay longer, as MetaRoCE's timer adds the peer's ACK delay;
     * timers already armed keep their deadlines. 0 (the default) changes nothing. Negative
     * values count as 0, values above MAX_HOST_DELAY as that. A MetaRoCE connection waits
     * at most a quarter of its connectionTimeout more, so that a host delay never takes the
     * retransmissions the connection timeout leaves room for. The HIL feeds it from the
     * measured scheduling delay (docs/hil.md, "Timers on real links").
     */
    void SetHostDelay(Time delay);

    /**
     * Set the host delay of connection \p qpn's peer: how late the peer may acknowledge
     * because it did not run (the HIL's peer reports). The connection's retransmission
     * timers armed from now on wait the larger of it and SetHostDelay()'s, with the same
     * limits. Other connections are not affected. 0 (the default) changes nothing.
     * \return false if there is no such connection
     */
    bool SetPeerHostDelay(uint32_t qpn, Time delay);

    /// The largest host delay SetHostDelay() takes.
    static constexpr Time MAX_HOST_DELAY = MilliSeconds(10000);
    /// \return the host delay (SetHostDelay()).
    Time HostDelay() const;

    /// Attach an observer (nullptr to detach); it must outlive the endpoint or be detached.
    void SetObserver(EngineObserver* observer);

    /// \return the largest datagram a connection with \p mtu produces.
    static size_t MaxDatagramSize(uint32_t mtu);

  private:
    /// Timer heap entry; stale when generation differs from the connection's.
    struct TimerEntry
    {
        Time deadline;       //!< when
        uint32_t qpn;        //!< which connection
        uint64_t generation; //!< connection's timerGeneration when pushed

        /// Min-heap order.
        bool operator>(const TimerEntry& o) const
        {
            return deadline > o.deadline;
        }
    };

    TransportConnection* Find(uint32_t qpn) const;
    /// \return the QPN of table slot \p index (EndpointConfig::qpnStride).
    uint64_t QpnOf(size_t index) const;
    /// \return the table slot of \p qpn, SIZE_MAX if this endpoint never hands it out.
    size_t IndexOf(uint32_t qpn) const;
    /// Put \p conn on the ready list if it may send, and re-arm its timer.
    void Refresh(Time now, TransportConnection& conn);
    /// Push \p conn's next deadline on the timer heap if it moved earlier.
    void ArmTimer(TransportConnection& conn);

    EndpointShared m_shared;                                   //!< shared state
    std::vector<std::unique_ptr<TransportConnection>> m_conns; //!< by IndexOf(qpn)
    RingQueue<uint32_t> m_freeQpns;                            //!< destroyed, oldest first
    uint32_t m_qpnStride{1};                                   //!< EndpointConfig::qpnStride
    uint32_t m_qpnOffset{0};                                   //!< EndpointConfig::qpnOffset
    size_t m_live{0};                                          //!< live connections
    RingQueue<uint32_t> m_ready;                               //!< connections that may send
    std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>>
        m_timers; //!< connection deadlines
};

} // namespace metaroce

#endif // METAROCE_ENDPOINT_H
