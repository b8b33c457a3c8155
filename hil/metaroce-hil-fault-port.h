/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_FAULT_PORT_H
#define METAROCE_HIL_FAULT_PORT_H

#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-random.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <vector>

/**
 * \file
 * Seeded fault injection on the egress of any frame port: random drops, bursty drops
 * (Gilbert-Elliott), duplication and reordering by delay. The kernel's netem is not available
 * on every machine, and a seed makes the fault schedule repeatable: the same seed and the
 * same sequence of sends give the same decisions.
 */

namespace metaroce
{
namespace hil
{

/// Faults applied to every sent datagram.
struct FaultConfig
{
    double loss{0};       //!< independent drop probability
    double burstStart{0}; //!< Gilbert-Elliott: P(good -> bad) per datagram (0 = off)
    double burstEnd{0.5}; //!< P(bad -> good) per datagram
    double burstLoss{1};  //!< drop probability in the bad state
    double duplicate{0};  //!< probability a datagram is sent twice
    double reorder{0};    //!< probability a datagram is held back by reorderDelay
    Time reorderDelay{MicroSeconds(100)}; //!< hold time of reordered datagrams
    uint64_t seed{1};                     //!< PRNG seed

    /// \return true if any fault is enabled.
    bool Enabled() const
    {
        return loss > 0 || burstStart > 0 || duplicate > 0 || reorder > 0;
    }

    /**
     * Check the probabilities.
     * \param[out] why the first problem
     * \return true if valid
     */
    bool Validate(std::string& why) const;
};

/**
 * A datagram-level fault decider, independent of I/O (unit-testable): one Decide() call per
 * sent datagram, in order.
 */
class FaultModel
{
  public:
    /// What to do with one datagram.
    struct Decision
    {
        bool drop{false};      //!< do not send it
        bool duplicate{false}; //!< send it twice
        bool reorder{false};   //!< send it after the reorder delay
    };

    /// Create with \p cfg.
    explicit FaultModel(const FaultConfig& cfg);

    /// \return the decision for the next datagram.
    Decision Decide();

  private:
    FaultConfig m_cfg; //!< settings
    Rng m_rng;         //!< seeded PRNG
    bool m_bad{false}; //!< Gilbert-Elliott state
};

/// Wraps a port and applies a FaultModel to its egress.
class FaultFramePort : public FramePort
{
  public:
    /// Wrap \p inner.
    FaultFramePort(boost::asio::io_context& io,
                   const HostClock& clock,
                   std::unique_ptr<FramePort> inner,
                   const FaultConfig& cfg);

    void Start(ReceiveHandler onDatagram, BatchHandler onBatch) override;
    SendStatus Send(const TxDatagram& tx) override;

    SendStatus Flush() override
    {
        return m_inner->Flush();
    }

    void PollReceive() override
    {
        m_inner->PollReceive();
    }

    void SetBacklogEcn(uint32_t threshold) override
    {
        m_inner->SetBacklogEcn(threshold);
    }

    bool DeliversInBlocks() const override
    {
        return m_inner->DeliversInBlocks();
    }

    void AsyncWaitWritable(WritableHandler handler) override;
    void Close() override;
    PortCounters Counters() const override;
    std::string Describe() const override;

    MacAddress LocalMac() const override
    {
        return m_inner->LocalMac();
    }

    void LearnPeer(uint32_t ip, const MacAddress& mac, uint16_t dataPort, bool takesTrains) override
    {
        m_inner->LearnPeer(ip, mac, dataPort, takesTrains);
    }

  private:
    /// A held-back datagram.
    struct Delayed
    {
        Time due;                   //!< when to send it
        TxDatagram tx;              //!< its metadata (buffer points into bytes)
        std::vector<uint8_t> bytes; //!< its bytes
    };

    void DoWaitDelayed();
    void OnDelayed(const boost::system::error_code& error);

    const HostClock& m_clock;           //!< time source
    std::unique_ptr<FramePort> m_inner; //!< wrapped port
    FaultConfig m_cfg;                  //!< settings
    FaultModel m_model;                 //!< decisions
    boost::asio::steady_timer m_timer;  //!< fires for the oldest held datagram
    std::deque<Delayed> m_delayed;      //!< held datagrams, in due order
    bool m_timerArmed{false};           //!< m_timer is waiting
    PortCounters m_counters;            //!< fault counters
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_FAULT_PORT_H
