/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-pcap-helper.h"

#include "metaroce-net-device.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRocePcapHelper");

namespace
{
/// The pcap link type of Ethernet frames (LINKTYPE_ETHERNET,
/// https://www.tcpdump.org/linktypes.html). By number: ns-3.49 deprecates PcapHelper::DLT_EN10MB
/// for iana::LinkType::ETHERNET, which ns-3.48 and earlier do not have.
constexpr uint32_t LINKTYPE_ETHERNET = 1;
} // namespace

void
MetaRocePcapHelper::SetNanosecondTimestamps(bool enabled)
{
    m_nanosecond = enabled;
}

void
MetaRocePcapHelper::EnablePcapInternal(std::string prefix,
                                       Ptr<NetDevice> nd,
                                       bool /* promiscuous */,
                                       bool explicitFilename)
{
    Ptr<MetaRoceNetDevice> device = nd->GetObject<MetaRoceNetDevice>();
    if (!device)
    {
        NS_LOG_WARN("MetaRocePcapHelper: device " << nd << " is not a MetaRoceNetDevice");
        return;
    }
    PcapHelper pcapHelper;
    const std::string filename =
        explicitFilename ? prefix : pcapHelper.GetFilenameFromDevice(prefix, device);
    // As PcapHelper::CreateFile, but with the timestamp resolution chosen here.
    Ptr<PcapFileWrapper> file =
        CreateObjectWithAttributes<PcapFileWrapper>("NanosecMode", BooleanValue(m_nanosecond));
    file->Open(filename, std::ios::out);
    NS_ABORT_MSG_IF(file->Fail(), "MetaRocePcapHelper: cannot open " << filename);
    file->Init(LINKTYPE_ETHERNET, SNAP_LENGTH);
    pcapHelper.HookDefaultSink<MetaRoceNetDevice>(device, "Sniffer", file);
}

} // namespace ns3
