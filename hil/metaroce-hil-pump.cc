/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-pump.h"

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
            m_tx.buffer = m_buffer.data();
            m_tx.capacity = m_buffer.size();
            if (!m_endpoint.PollTransmit(now, m_tx))
            {
                break;
            }
        }
        if (!m_sink.Transmit(m_tx))
        {
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
