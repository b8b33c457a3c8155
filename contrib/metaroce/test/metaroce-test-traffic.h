/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Test-only traffic for the fabric tests: a host "blaster" that feeds a port in pull mode with
 * UDP frames built by metaroce::EncapsulateFrame, and a sink that counts what arrives.
 * Not part of the module: the real host NIC runs the MetaRoCE engine.
 */

#ifndef METAROCE_TEST_TRAFFIC_H
#define METAROCE_TEST_TRAFFIC_H

#include "ns3/data-rate.h"
#include "ns3/metaroce-encap.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/nstime.h"

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace metaroce_test
{

/// Emits UDP frames on one host port in pull mode.
class Blaster
{
  public:
    /**
     * \param port the host port (its pull callback is taken over)
     * \param srcIp source address (host order)
     * \param dstIp destination address (host order)
     */
    Blaster(ns3::Ptr<ns3::MetaRoceNetDevice> port, uint32_t srcIp, uint32_t dstIp);

    /// Source ports used round robin, one per frame (default {10000}).
    void SetSourcePorts(std::vector<uint16_t> ports);
    /// Number of frames to send (default 100).
    void SetFrames(uint32_t frames);
    /// UDP payload bytes per frame (default 1000).
    void SetPayload(uint32_t bytes);
    /// ECN codepoint of every frame (default ECT0).
    void SetEcn(metaroce::Ecn ecn);
    /// DSCP of every frame (default 0).
    void SetDscp(uint8_t dscp);
    /// Pace at this rate instead of line rate (0 = line rate).
    void SetRate(ns3::DataRate rate);
    /// Start sending at this absolute time.
    void Start(ns3::Time at);
    /// \return frames handed to the port.
    uint32_t GetSent() const;

  private:
    ns3::Ptr<ns3::Packet> Pull();
    void Wake();

    ns3::Ptr<ns3::MetaRoceNetDevice> m_port;
    metaroce::DatagramMeta m_meta;
    std::vector<uint16_t> m_srcPorts{10000};
    uint32_t m_frames{100};
    uint32_t m_payload{1000};
    ns3::DataRate m_rate{0};
    bool m_started{false};
    uint32_t m_sent{0};
    ns3::Time m_nextAllowed;
    bool m_wakeScheduled{false};
    std::array<uint8_t, 4400> m_buffer{};
};

/// Counts frames arriving at host ports.
class Sink
{
  public:
    /// Receive on \p port (its frame receive callback is taken over).
    void Attach(ns3::Ptr<ns3::MetaRoceNetDevice> port);

    uint64_t frames{0};                           //!< valid frames
    uint64_t bytes{0};                            //!< their bytes
    uint64_t ceFrames{0};                         //!< frames marked CE
    uint64_t notEctFrames{0};                     //!< frames arriving Not-ECT
    uint64_t malformed{0};                        //!< frames that failed to parse
    std::map<uint16_t, uint64_t> bySourcePort;    //!< frames per UDP source port
    std::map<uint32_t, uint64_t> bySourceAddress; //!< frames per source address
    std::vector<uint8_t> ttls;                    //!< TTL of each frame (first 1000)
    std::vector<uint32_t> sequence;               //!< payload sequence numbers (first 10000)

  private:
    void Receive(ns3::Ptr<ns3::MetaRoceNetDevice> port, ns3::Ptr<ns3::Packet> frame);
};

/**
 * Build one frame like the blaster does.
 * \param srcIp source address
 * \param dstIp destination address
 * \param srcPort UDP source port
 * \param payload payload bytes
 * \param ecn ECN codepoint
 * \return the frame
 */
ns3::Ptr<ns3::Packet> MakeFrame(uint32_t srcIp,
                                uint32_t dstIp,
                                uint16_t srcPort,
                                uint32_t payload,
                                metaroce::Ecn ecn = metaroce::Ecn::ECT0);

} // namespace metaroce_test

#endif // METAROCE_TEST_TRAFFIC_H
