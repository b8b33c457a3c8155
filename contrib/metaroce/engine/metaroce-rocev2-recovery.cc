/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rocev2-recovery.h"

#include "metaroce-rocev2-go-back-n.h"
#include "metaroce-rocev2-irn.h"

namespace metaroce
{

std::unique_ptr<RoceRecovery>
CreateRoceRecovery(const std::string& name, const ConnectionConfig& cfg)
{
    if (name == "gbn")
    {
        return std::make_unique<GoBackNRecovery>(cfg);
    }
    if (name == "irn")
    {
        return std::make_unique<IrnRecovery>(cfg);
    }
    return nullptr;
}

std::unique_ptr<RoceRecoveryReceiver>
CreateRoceRecoveryReceiver(const std::string& name, const ConnectionConfig& cfg)
{
    if (name == "gbn")
    {
        return std::make_unique<GoBackNReceiver>();
    }
    if (name == "irn")
    {
        return std::make_unique<IrnReceiver>(cfg);
    }
    return nullptr;
}

} // namespace metaroce
