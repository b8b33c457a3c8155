/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-fault-port.h"

#include <cstdio>

namespace metaroce
{
namespace hil
{

bool
FaultConfig::Validate(std::string& why) const
{
    struct Field
    {
        const char* name;
        double value;
    };

    for (const Field& f : {Field{"loss", loss},
                           Field{"burst start", burstStart},
                           Field{"burst end", burstEnd},
                           Field{"burst loss", burstLoss},
                           Field{"duplicate", duplicate},
                           Field{"reorder", reorder}})
    {
        if (!(f.value >= 0 && f.value <= 1))
        {
            why = std::string(f.name) + " probability must be in [0, 1]";
            return false;
        }
    }
    if (burstStart > 0 && burstEnd <= 0)
    {
        why = "burst end probability must be > 0 when bursts are on";
        return false;
    }
    if (reorderDelay < 0)
    {
        why = "reorder delay must not be negative";
        return false;
    }
    return true;
}

FaultModel::FaultModel(const FaultConfig& cfg)
    : m_cfg(cfg),
      m_rng(cfg.seed)
{
}

FaultModel::Decision
FaultModel::Decide()
{
    Decision d;
    // Draw every variable for every datagram so that enabling one fault does not shift the
    // random sequence of the others.
    double lossDraw = m_rng.Uniform();
    double stateDraw = m_rng.Uniform();
    double burstDraw = m_rng.Uniform();
    double dupDraw = m_rng.Uniform();
    double reorderDraw = m_rng.Uniform();
    if (m_cfg.burstStart > 0)
    {
        m_bad = m_bad ? stateDraw >= m_cfg.burstEnd : stateDraw < m_cfg.burstStart;
    }
    d.drop = lossDraw < m_cfg.loss || (m_bad && burstDraw < m_cfg.burstLoss);
    d.duplicate = !d.drop && dupDraw < m_cfg.duplicate;
    d.reorder = !d.drop && reorderDraw < m_cfg.reorder;
    return d;
}

FaultFramePort::FaultFramePort(boost::asio::io_context& io,
                               const HostClock& clock,
                               std::unique_ptr<FramePort> inner,
                               const FaultConfig& cfg)
    : m_clock(clock),
      m_inner(std::move(inner)),
      m_cfg(cfg),
      m_model(cfg),
      m_timer(io)
{
}

void
FaultFramePort::Start(ReceiveHandler onDatagram, BatchHandler onBatch)
{
    m_inner->Start(std::move(onDatagram), std::move(onBatch));
}

SendStatus
FaultFramePort::Send(const TxDatagram& tx)
{
    FaultModel::Decision d = m_model.Decide();
    if (d.drop)
    {
        ++m_counters.faultDropped;
        return SendStatus::SENT;
    }
    if (d.reorder)
    {
        ++m_counters.faultReordered;
        Delayed held;
        held.due = m_clock.Now() + m_cfg.reorderDelay;
        held.bytes.assign(tx.buffer, tx.buffer + tx.length);
        held.tx = tx;
        m_delayed.push_back(std::move(held));
        m_delayed.back().tx.buffer = m_delayed.back().bytes.data();
        m_delayed.back().tx.capacity = m_delayed.back().bytes.size();
        if (!m_timerArmed)
        {
            DoWaitDelayed();
        }
        if (!d.duplicate)
        {
            return SendStatus::SENT;
        }
        // A duplicate of a reordered datagram: the copy goes now, the original later.
    }
    SendStatus st = m_inner->Send(tx);
    if (st == SendStatus::SENT && d.duplicate && !d.reorder)
    {
        ++m_counters.faultDuplicated;
        m_inner->Send(tx); // best effort: a blocked duplicate is simply not sent
    }
    else if (d.duplicate && d.reorder)
    {
        ++m_counters.faultDuplicated;
        return SendStatus::SENT;
    }
    return st;
}

void
FaultFramePort::DoWaitDelayed()
{
    m_timerArmed = true;
    m_timer.expires_at(m_clock.ToSteady(m_delayed.front().due));
    m_timer.async_wait([this](const boost::system::error_code& error) { OnDelayed(error); });
}

void
FaultFramePort::OnDelayed(const boost::system::error_code& error)
{
    m_timerArmed = false;
    if (error)
    {
        return;
    }
    Time now = m_clock.Now();
    while (!m_delayed.empty() && m_delayed.front().due <= now)
    {
        // A held datagram that meets a full queue is lost, as on a congested link.
        if (m_inner->Send(m_delayed.front().tx) != SendStatus::SENT)
        {
            ++m_counters.faultDropped;
        }
        m_delayed.pop_front();
    }
    m_inner->Flush(); // what stays queued goes with the host's next flush
    if (!m_delayed.empty())
    {
        DoWaitDelayed();
    }
}

void
FaultFramePort::AsyncWaitWritable(WritableHandler handler)
{
    m_inner->AsyncWaitWritable(std::move(handler));
}

void
FaultFramePort::Close()
{
    m_timer.cancel();
    m_delayed.clear();
    m_inner->Close();
}

PortCounters
FaultFramePort::Counters() const
{
    PortCounters c = m_inner->Counters();
    AddCounters(c, m_counters);
    return c;
}

std::string
FaultFramePort::Describe() const
{
    char text[200];
    std::snprintf(text,
                  sizeof(text),
                  " + faults(loss %g, burst %g/%g/%g, dup %g, reorder %g by %g us, seed %llu)",
                  m_cfg.loss,
                  m_cfg.burstStart,
                  m_cfg.burstEnd,
                  m_cfg.burstLoss,
                  m_cfg.duplicate,
                  m_cfg.reorder,
                  double(m_cfg.reorderDelay) / 1e6,
                  static_cast<unsigned long long>(m_cfg.seed));
    return m_inner->Describe() + text;
}

} // namespace hil
} // namespace metaroce
