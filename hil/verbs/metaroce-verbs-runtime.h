/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_VERBS_RUNTIME_H
#define METAROCE_VERBS_RUNTIME_H

#include "metaroce-endpoint.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-pump.h"
#include "metaroce-hil-timers.h"
#include "metaroce-verbs-config.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

/**
 * \file
 * The engine behind the drop-in libibverbs: one Endpoint on one frame port, driven by the
 * EnginePump on a progress thread of the library (an Asio io_context).
 *
 * One mutex guards the engine, the pump, the timer and the sending side of the port. The
 * progress thread takes it for every received datagram and timer expiry; an application
 * thread takes it in ibv_post_send / ibv_post_recv and runs the pump itself, so a posted
 * message leaves without waiting for the progress thread. Only the progress thread reads the
 * port and waits for it to become writable.
 */

namespace metaroce
{
namespace verbs
{

/// Receives the completions of one engine connection (a QP).
class CompletionSink
{
  public:
    virtual ~CompletionSink() = default;
    /// Called with the runtime's mutex held.
    virtual void OnCompletion(const Completion& c) = 0;
};

/// The process-wide engine of the metaroce0 device.
class Runtime : private hil::PumpSink
{
  public:
    /**
     * The runtime, started on first use; every call must be paired with Release().
     * \return nullptr with \p why if the port cannot be opened
     */
    static Runtime* Acquire(const VerbsConfig& cfg, const InterfaceInfo& iface, std::string& why);
    /// Drop one reference; the last one stops the progress thread and closes the port.
    static void Release();

    ~Runtime() override;

    /// \return the mutex that guards Engine() and Kick().
    std::mutex& Mutex()
    {
        return m_mutex;
    }

    /// \return the engine (use with Mutex() held).
    Endpoint& Engine()
    {
        return *m_endpoint;
    }

    /// \return engine time now.
    Time Now() const
    {
        return m_clock.Now();
    }

    /// Run the pump after an input (Mutex() held).
    void Kick();

    /// A QP connects to \p ip: peers receive on the same data port as we do (Mutex() held).
    void LearnPeer(uint32_t ip);

    /// Route the completions of \p qpn to \p sink (Mutex() held; nullptr to stop).
    void SetSink(uint32_t qpn, CompletionSink* sink);

    /// \return the settings.
    const VerbsConfig& Config() const
    {
        return m_cfg;
    }

    /// \return the interface.
    const InterfaceInfo& Interface() const
    {
        return m_iface;
    }

    /// \return the engine MTU of new connections, bytes.
    uint32_t Mtu() const
    {
        return m_mtu;
    }

    /// \return the port's counters (Mutex() held).
    hil::PortCounters PortCounters() const;

  private:
    Runtime(const VerbsConfig& cfg, const InterfaceInfo& iface);
    bool Start(std::string& why);
    void Stop();

    bool Transmit(const TxDatagram& tx) override;
    void Deliver(const Completion& c) override;
    void ArmTimer(Time deadline) override;

    void OnDatagram(const DatagramMeta& meta, const uint8_t* data, size_t len);
    void OnBatch();
    void OnTimer(const boost::system::error_code& error, uint64_t generation);
    /// Handle why the pump stopped (Mutex() held).
    void AfterRun(hil::EnginePump::State state);
    void OnWritable(const boost::system::error_code& error);

    VerbsConfig m_cfg;            //!< settings
    InterfaceInfo m_iface;        //!< interface
    uint32_t m_mtu;               //!< engine MTU
    boost::asio::io_context m_io; //!< progress context
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> m_work; //!< keep
    hil::HostClock m_clock;                           //!< engine time
    std::mutex m_mutex;                               //!< guards everything below
    std::unique_ptr<Endpoint> m_endpoint;             //!< the engine
    std::unique_ptr<hil::FramePort> m_port;           //!< frames
    std::unique_ptr<hil::EnginePump> m_pump;          //!< the pump
    boost::asio::steady_timer m_timer;                //!< the engine's one timer
    std::unique_ptr<hil::HostDelayProbe> m_hostDelay; //!< METAROCE_VERBS_HOST_DELAY on
    Time m_timerAt{TIME_INFINITE};                    //!< deadline m_timer waits for
    uint64_t m_timerGeneration{0};                    //!< invalidates superseded waits
    bool m_waitingWritable{false};                    //!< a writable wait is pending
    bool m_kickPosted{false};                         //!< a Kick() is queued on the progress thread
    bool m_closed{false};                             //!< Stop() was called
    std::unordered_map<uint32_t, CompletionSink*> m_sinks; //!< by engine QPN
    std::thread m_thread;                                  //!< the progress thread
};

} // namespace verbs
} // namespace metaroce

#endif // METAROCE_VERBS_RUNTIME_H
