/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_LOSS_DETECTION_H
#define METAROCE_LOSS_DETECTION_H

#include "metaroce-config.h"
#include "metaroce-path.h"

#include <memory>
#include <string>
#include <vector>

namespace metaroce
{

/// Decides which in-flight packets of a path are lost after an ACK (stateless strategy).
class LossDetection
{
  public:
    virtual ~LossDetection() = default;
    /// \return the name the strategy is chosen by.
    virtual const char* Name() const = 0;
    /**
     * Append to \p lost the PSNs of \p path's INFLIGHT packets that are now deemed lost.
     * The caller changes their state.
     */
    virtual void DetectLosses(PathState& path,
                              const ConnectionConfig& cfg,
                              std::vector<uint32_t>& lost) = 0;
};

/**
 * \return the strategy called \p name, or nullptr if unknown. "sack-gap": a path carries
 * its own ordered sequence, so a packet is lost as soon as reorderThreshold packets sent
 * after it on the same path have been acknowledged (a SACK gap). Ordering is by
 * transmission, not PSN, so a lost retransmission is detected the same way.
 */
std::unique_ptr<LossDetection> CreateLossDetection(const std::string& name);

} // namespace metaroce

#endif // METAROCE_LOSS_DETECTION_H
