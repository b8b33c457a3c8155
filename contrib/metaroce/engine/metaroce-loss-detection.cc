/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-loss-detection.h"

namespace metaroce
{

namespace
{

/// SACK-gap loss detection over the per-path transmission order.
class SackGapLossDetection : public LossDetection
{
  public:
    const char* Name() const override
    {
        return "sack-gap";
    }

    void DetectLosses(PathState& path, const ConnectionConfig& cfg, std::vector<uint32_t>& lost)
        override
    {
        if (!path.anyAcked)
        {
            return;
        }
        for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
        {
            const InflightEntry& e = path.Entry(psn);
            if (e.state == InflightEntry::INFLIGHT &&
                int32_t(path.highestAckedOrder - e.sendOrder) >= int32_t(cfg.reorderThreshold))
            {
                lost.push_back(psn);
            }
        }
    }
};

} // namespace

std::unique_ptr<LossDetection>
CreateLossDetection(const std::string& name)
{
    if (name == "sack-gap")
    {
        return std::make_unique<SackGapLossDetection>();
    }
    return nullptr;
}

} // namespace metaroce
