/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-rate-control.h"

namespace metaroce
{

namespace
{

/// DCQCN (Zhu et al., SIGCOMM 2015): the reaction point sets the rate, the notification
/// point answers CE marks with at most one CNP per cnpInterval.
class DcqcnRateControl : public RoceRateControl
{
  public:
    DcqcnRateControl(const ConnectionConfig::RoceV2Options& opt, double ceilingBps)
        : m_rp(opt, ceilingBps),
          m_np(opt.cnpInterval)
    {
    }

    const char* Name() const override
    {
        return "dcqcn";
    }

    double Rate() const override
    {
        return m_rp.Rate();
    }

    RoceRateChange Advance(Time now) override
    {
        m_rp.Advance(now);
        RoceRateChange change;
        change.rate = m_rp.Rate();
        if (change.rate != m_reported)
        {
            change.changed = true;
            change.decreased = m_reported >= 0 && change.rate < m_reported;
            m_reported = change.rate;
        }
        return change;
    }

    void OnBytesSent(Time now, uint64_t bytes) override
    {
        m_rp.OnBytesSent(now, bytes);
    }

    void OnCnp(Time now) override
    {
        m_rp.OnCnp(now);
    }

    bool OnCeMarked(Time now) override
    {
        return m_np.OnCeMarked(now);
    }

    const DcqcnReactionPoint& ReactionPoint() const override
    {
        return m_rp;
    }

    size_t HeapBytes() const override
    {
        return sizeof(*this);
    }

  private:
    DcqcnReactionPoint m_rp;     //!< sender side
    DcqcnNotificationPoint m_np; //!< receiver side
    double m_reported{-1};       //!< rate reported last (-1: none yet)
};

/// No rate control: every packet is paced at the ceiling; CE marks are not answered.
class NoRateControl : public RoceRateControl
{
  public:
    NoRateControl(const ConnectionConfig::RoceV2Options& opt, double ceilingBps)
        : m_idle(opt, ceilingBps),
          m_rate(ceilingBps)
    {
    }

    const char* Name() const override
    {
        return "none";
    }

    double Rate() const override
    {
        return m_rate;
    }

    RoceRateChange Advance(Time /*now*/) override
    {
        return RoceRateChange{}; // a constant rate is never reported
    }

    void OnBytesSent(Time /*now*/, uint64_t /*bytes*/) override
    {
    }

    void OnCnp(Time /*now*/) override
    {
    }

    bool OnCeMarked(Time /*now*/) override
    {
        return false;
    }

    const DcqcnReactionPoint& ReactionPoint() const override
    {
        return m_idle;
    }

    size_t HeapBytes() const override
    {
        return sizeof(*this);
    }

  private:
    DcqcnReactionPoint m_idle; //!< never driven: what RoceV2Connection::Dcqcn() shows
    double m_rate;             //!< the ceiling, b/s
};

} // namespace

const char*
RoceRateControlName(const ConnectionConfig::RoceV2Options& opt)
{
    return opt.dcqcn ? "dcqcn" : "none";
}

std::unique_ptr<RoceRateControl>
CreateRoceRateControl(const std::string& name,
                      const ConnectionConfig::RoceV2Options& opt,
                      double ceilingBps)
{
    if (name == "dcqcn")
    {
        return std::make_unique<DcqcnRateControl>(opt, ceilingBps);
    }
    if (name == "none")
    {
        return std::make_unique<NoRateControl>(opt, ceilingBps);
    }
    return nullptr;
}

} // namespace metaroce
