/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_PUMP_H
#define METAROCE_HIL_PUMP_H

#include "metaroce-endpoint.h"

#include <cstddef>
#include <vector>

/**
 * \file
 * The engine pump, written once: after every input to an Endpoint (HandleDatagram, PostSend,
 * PostRecv, HandleTimeout), drain PollTransmit to the host's port, drain PollCompletion to the
 * host, and tell the host the one deadline to wait for.
 *
 * Pure C++17 over the engine API (no Asio, no clock), so the ns-3 adapter can use the same
 * class; it belongs in contrib/metaroce/engine/ and is kept here until it moves.
 */

namespace metaroce
{
namespace hil
{

/// What the pump hands to its host.
class PumpSink
{
  public:
    virtual ~PumpSink() = default;
    /**
     * Put \p tx on the wire.
     * \return false if the port cannot take it now: the pump keeps it and offers it again first
     *         on the next Run(); the host should run the pump again once the port is writable
     */
    virtual bool Transmit(const TxDatagram& tx) = 0;

    /**
     * A buffer the next datagram may be written into, so that Transmit() takes it without a
     * copy (FramePort::ReserveTxBuffer()). \param[out] capacity its size. \return nullptr if
     * none: the pump writes into its own buffer.
     */
    virtual uint8_t* TxBuffer(size_t& capacity)
    {
        capacity = 0;
        return nullptr;
    }

    /// The buffer of TxBuffer() was not used.
    virtual void ReleaseTxBuffer()
    {
    }

    /// Deliver a completion.
    virtual void Deliver(const Completion& c) = 0;
    /// Wait until \p deadline (engine time; TIME_INFINITE: no deadline) and then call
    /// HandleTimeout() and run the pump.
    virtual void ArmTimer(Time deadline) = 0;
};

/// Drives one Endpoint for one host.
class EnginePump
{
  public:
    /// Why Run() returned.
    enum class State : uint8_t
    {
        IDLE,        //!< the engine has nothing to send now
        BLOCKED,     //!< the port refused a datagram: run again when it is writable
        BURST_LIMIT, //!< sent maxBurst datagrams: run again soon (after other input)
    };

    /**
     * Drive \p endpoint for \p sink.
     * \param maxDatagram buffer size (Endpoint::MaxDatagramSize() of the largest MTU)
     * \param maxBurst datagrams per Run() before yielding to other input
     */
    EnginePump(Endpoint& endpoint, PumpSink& sink, size_t maxDatagram, size_t maxBurst = 64);

    /// Run the pump at \p now. \return why it stopped transmitting.
    State Run(Time now);

    /// The timer armed through ArmTimer() fired: HandleTimeout() then Run().
    State OnTimer(Time now);

    /// \return datagrams transmitted so far.
    uint64_t Transmitted() const
    {
        return m_transmitted;
    }

  private:
    Endpoint& m_endpoint;          //!< the engine
    PumpSink& m_sink;              //!< the host
    size_t m_maxBurst;             //!< yield after this many datagrams
    std::vector<uint8_t> m_buffer; //!< transmit buffer
    TxDatagram m_tx;               //!< the datagram being transmitted
    bool m_pending{false};         //!< m_tx was refused and must go first
    uint64_t m_transmitted{0};     //!< datagrams transmitted
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PUMP_H
