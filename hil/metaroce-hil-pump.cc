/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-pump.h"

#include <cstring>

namespace metaroce
{
namespace hil
{

EnginePump::EnginePump(Endpoint& endpoint, PumpSink& sink, size_t maxDatagram, size_t maxBurst)
    : m_endpoint(endpoint),
      m_sink(sink),
      m_maxBurst(maxBurst),
      m_buffer(maxDatagram)
{
}

EnginePump::State
EnginePump::Run(Time now)
{
    State state = State::IDLE;
    size_t sent = 0;
    while (true)
    {
        if (!m_pending)
        {
            if (sent >= m_maxBurst)
            {
                state = State::BURST_LIMIT;
                break;
            }
            m_tx = TxDatagram();
            size_t capacity = 0;
            uint8_t* direct = m_sink.TxBuffer(capacity);
            if (direct && capacity >= m_buffer.size())
            {
                // The port's own slot: no copy on Transmit(). No larger than the pump's own
                // buffer, which takes the datagram back if the port refuses it.
                m_tx.buffer = direct;
                m_tx.capacity = m_buffer.size();
            }
            else
            {
                if (direct)
                {
                    m_sink.ReleaseTxBuffer();
                }
                m_tx.buffer = m_buffer.data();
                m_tx.capacity = m_buffer.size();
            }
            if (!m_endpoint.PollTransmit(now, m_tx))
            {
                if (m_tx.buffer != m_buffer.data())
                {
                    m_sink.ReleaseTxBuffer();
                }
                break;
            }
        }
        if (!m_sink.Transmit(m_tx))
        {
            if (m_tx.buffer != m_buffer.data())
            {
                // Refused: keep it in the pump's own buffer until it is offered again, and
                // end the port's reservation (the host may have refused without a Send()).
                std::memcpy(m_buffer.data(), m_tx.buffer, m_tx.length);
                m_tx.buffer = m_buffer.data();
                m_tx.capacity = m_buffer.size();
                m_sink.ReleaseTxBuffer();
            }
            m_pending = true;
            state = State::BLOCKED;
            break;
        }
        m_pending = false;
        ++sent;
        ++m_transmitted;
    }
    Completion c;
    while (m_endpoint.PollCompletion(c))
    {
        m_sink.Deliver(c);
    }
    m_sink.ArmTimer(m_endpoint.NextTimeout());
    return state;
}

EnginePump::State
EnginePump::OnTimer(Time now)
{
    m_endpoint.HandleTimeout(now);
    return Run(now);
}

} // namespace hil
} // namespace metaroce
