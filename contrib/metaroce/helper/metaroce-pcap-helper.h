/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PCAP_HELPER_H
#define METAROCE_PCAP_HELPER_H

#include "ns3/trace-helper.h"

#include <string>

/**
 * \file
 * Opt-in pcap capture of MetaRoceNetDevice ports.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * Writes the real frame bytes a MetaRoceNetDevice sends and receives (PFC frames included) to
 * a pcap file with link type DLT_EN10MB, which Wireshark and tshark decode as
 * Ethernet/IPv4/UDP (and InfiniBand BTH on UDP port 4791). All the EnablePcap() forms of
 * ns3::PcapHelperForDevice (one device, a container, a node, all) are available; files are
 * named <prefix>-<node id>-<device id>.pcap unless explicitFilename is set.
 */
class MetaRocePcapHelper : public PcapHelperForDevice
{
  public:
    /// Snapshot length written to the file header (longer frames are truncated).
    static constexpr uint32_t SNAP_LENGTH = 65535;

    MetaRocePcapHelper() = default;
    ~MetaRocePcapHelper() override = default;

    /**
     * Choose the timestamp resolution of files opened from now on. Nanoseconds by default:
     * at 100 Gb/s a 1,000-byte frame lasts 82 ns, so microsecond stamps collapse bursts.
     * \param enabled true for nanosecond, false for classic microsecond pcap
     */
    void SetNanosecondTimestamps(bool enabled);

    /**
     * Enable capture on one device (devices of other types are ignored with a warning).
     * \param prefix file name prefix
     * \param nd the device
     * \param promiscuous unused: a point-to-point port sees only its own frames
     * \param explicitFilename use \p prefix as the whole file name
     */
    void EnablePcapInternal(std::string prefix,
                            Ptr<NetDevice> nd,
                            bool promiscuous,
                            bool explicitFilename) override;

  private:
    bool m_nanosecond{true}; //!< nanosecond timestamps
};

} // namespace ns3

#endif // METAROCE_PCAP_HELPER_H
