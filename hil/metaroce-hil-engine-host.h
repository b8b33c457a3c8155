/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_ENGINE_HOST_H
#define METAROCE_HIL_ENGINE_HOST_H

#include "metaroce-endpoint.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-pump.h"
#include "metaroce-hil-timers.h"

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

/**
 * \file
 * The daemon core: one Endpoint on one frame port, driven by the EnginePump on the daemon's
 * io_context thread. Received datagrams go to HandleDatagram() (a batch at a time, then one
 * pump); the one steady_timer follows NextTimeout(); a full port queue pauses transmission
 * until the port is writable; completions are routed to whoever owns their connection.
 */

namespace metaroce
{
namespace hil
{

/// Deadlines closer than this are handled by re-queuing on the context, not by a kernel timer.
constexpr Time SPIN_HORIZON = MicroSeconds(30);

/**
 * What EngineHost counts of received datagrams: the engine's RxStatus values, with
 * UNKNOWN_CONNECTION split in two, because after a session ends its peer's last packets (late
 * retransmissions, ACKs, a sender still running after a fatal error) reach a connection that
 * no longer exists, and those are not strays.
 */
struct RxCounts
{
    std::array<uint64_t, 8> byStatus{}; //!< by RxStatus; UNKNOWN_CONNECTION excludes the next
    uint64_t lateAfterTeardown{0};      //!< for a connection this host had destroyed
};

/// How the host's kernel timer behaved (see docs/hil.md, "Timers on real links").
struct TimerStats
{
    uint64_t expiries{0}; //!< kernel-timer wake-ups that reached the engine
    Time lateSum{0};      //!< sum of their lateness past the deadline
    Time lateMax{0};      //!< the largest lateness
    uint64_t drained{0};  //!< datagrams read just before a timeout was handled
};

/// Runs an Endpoint on a FramePort.
class EngineHost : private PumpSink
{
  public:
    /// Receives the completions of one connection.
    using CompletionHandler = std::function<void(const Completion&)>;

    /**
     * Create the engine and take the port.
     * \param maxMtu largest connection MTU that will be used (sizes the transmit buffer)
     */
    EngineHost(boost::asio::io_context& io,
               const HostClock& clock,
               const EndpointConfig& cfg,
               std::unique_ptr<FramePort> port,
               uint32_t maxMtu);
    ~EngineHost() override;
    EngineHost(const EngineHost&) = delete;
    EngineHost& operator=(const EngineHost&) = delete;

    /// Start receiving.
    void Start();
    /// Stop: close the port and the timer.
    void Close();

    /// \return the engine.
    Endpoint& GetEndpoint()
    {
        return m_endpoint;
    }

    /// \return the frame port.
    FramePort& Port()
    {
        return *m_port;
    }

    /// \return the context the host runs on (its thread's).
    boost::asio::io_context& Io()
    {
        return m_io;
    }

    /// \return the clock.
    const HostClock& Clock() const
    {
        return m_clock;
    }

    /// Run the pump now (call after PostSend / PostRecv); safe to call from a completion.
    void Pump();

    /// Deliver the completions of connection \p qpn to \p handler.
    void SetCompletionHandler(uint32_t qpn, CompletionHandler handler);
    /// Stop delivering the completions of \p qpn.
    void ClearCompletionHandler(uint32_t qpn);

    /// Endpoint::CreateConnection(), keeping track of reused QPNs (see DestroyConnection()).
    PostStatus CreateConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why);
    /// Destroy connection \p qpn; datagrams that still arrive for it count as late until the
    /// engine hands the QPN out again.
    void DestroyConnection(uint32_t qpn);

    /// \return how many received datagrams HandleDatagram() answered with \p status (for
    /// UNKNOWN_CONNECTION: without the late ones, see RxCounts).
    uint64_t RxCount(RxStatus status) const
    {
        return m_rx.byStatus[size_t(status)];
    }

    /// \return the receive counters so far (subtract an earlier copy for an interval).
    const RxCounts& GetRxCounts() const
    {
        return m_rx;
    }

    /**
     * Measure how late this host runs the I/O thread, during the whole run, and keep the
     * engine's host delay (Endpoint::SetHostDelay) at the largest lateness of the last
     * \p window (HostDelayEstimator): a wake-up every \p period, and every kernel-timer
     * expiry of the engine's own timer. Call once, after Start().
     */
    void StartHostDelayProbe(Time period = MilliSeconds(1),
                             Time window = DEFAULT_HOST_DELAY_WINDOW);

    /// \return this host's own delay now (0 without StartHostDelayProbe()).
    Time OwnHostDelay() const;

    /**
     * Peer \p peer (a session) reported its host delay \p delay (ControlChannel::
     * SetHostDelayExchange), kept for the summary (PeerHostDelay()). The connections of that
     * peer wait it (the session sets it on them: Endpoint::SetPeerHostDelay); the endpoint's
     * own host delay is this host's only, so one slow peer does not lengthen the timers of
     * the other peers' connections.
     */
    void RecordPeerHostDelay(const void* peer, Time delay);
    /// Forget peer \p peer's reports (its session ended).
    void ForgetPeerHostDelay(const void* peer);

    /// How long a peer's report counts (several heartbeats, which come at least once a second).
    static constexpr Time PEER_HOST_DELAY_WINDOW = MilliSeconds(4000);

    /// \return the peers' reports (RecordPeerHostDelay()), for the summary.
    const PeerHostDelays& PeerHostDelay() const
    {
        return m_peerDelay;
    }

    /// \return the host delay estimator (nullptr without StartHostDelayProbe()).
    const HostDelayEstimator* HostDelay() const
    {
        return m_hostDelay ? &m_hostDelay->Estimator() : nullptr;
    }

    /// \return how the kernel timer behaved so far.
    const TimerStats& GetTimerStats() const
    {
        return m_timerStats;
    }

    /// \return received datagrams the engine dropped since \p since (any status but
    /// ACCEPTED, late ones included).
    uint64_t RxDropped(const RxCounts& since = RxCounts()) const;

    /**
     * \return a one-line summary of drops since \p since ("malformed 3, bad_icrc 0,
     * unknown_connection 0, late_after_teardown 2, ...").
     */
    std::string DropSummary(const RxCounts& since = RxCounts()) const;

  private:
    bool Transmit(const TxDatagram& tx) override;

    uint8_t* TxBuffer(size_t& capacity) override
    {
        return m_port->ReserveTxBuffer(capacity);
    }

    void ReleaseTxBuffer() override
    {
        m_port->ReleaseTxBuffer();
    }

    void Deliver(const Completion& c) override;
    void ArmTimer(Time deadline) override;

    void OnDatagram(const DatagramMeta& meta, const uint8_t* data, size_t len);
    void DoWaitTimer(Time deadline);
    void OnTimer(const boost::system::error_code& error, uint64_t generation, bool soon);
    void DoWaitWritable();
    void OnWritable(const boost::system::error_code& error);
    /// Flush the port after a pump run. \return BLOCKED if it kept datagrams, else \p state.
    EnginePump::State FlushPort(EnginePump::State state);
    void AfterRun(EnginePump::State state);

    boost::asio::io_context& m_io;                      //!< the daemon's context
    const HostClock& m_clock;                           //!< engine time
    Endpoint m_endpoint;                                //!< the engine
    std::unique_ptr<FramePort> m_port;                  //!< frames
    EnginePump m_pump;                                  //!< the pump
    boost::asio::steady_timer m_timer;                  //!< the one engine timer
    Time m_timerAt{TIME_INFINITE};                      //!< deadline m_timer waits for
    Time m_timerDeadline{0};                            //!< deadline of the last kernel-timer wait
    TimerStats m_timerStats;                            //!< lateness of the kernel timer
    std::unique_ptr<HostDelayProbe> m_hostDelay;        //!< StartHostDelayProbe()
    PeerHostDelays m_peerDelay{PEER_HOST_DELAY_WINDOW}; //!< peers' reports
    uint64_t m_rxDatagrams{0};                          //!< datagrams handed to the engine
    uint64_t m_timerGeneration{0};                      //!< invalidates superseded waits
    bool m_waitingWritable{false};                      //!< a writable wait is pending
    bool m_pumpPosted{false};                           //!< a Pump() is queued on the context
    bool m_soonPosted{false}; //!< a near deadline is queued on the context
    bool m_running{false};    //!< inside Pump()
    bool m_again{false};      //!< Pump() was requested while running
    bool m_closed{false};     //!< Close() was called
    std::unordered_map<uint32_t, CompletionHandler> m_handlers; //!< by connection
    RxCounts m_rx;                                              //!< HandleDatagram results
    std::unordered_set<uint32_t> m_destroyed; //!< QPNs destroyed and not handed out again
    RateLimiter m_dropLog;                    //!< dropped-datagram lines
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_ENGINE_HOST_H
