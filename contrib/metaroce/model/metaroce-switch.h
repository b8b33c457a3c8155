/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_SWITCH_H
#define METAROCE_SWITCH_H

#include "metaroce-frame.h"
#include "metaroce-port-owner.h"

#include "ns3/event-id.h"
#include "ns3/object.h"
#include "ns3/ptr.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"
#include "ns3/traced-value.h"

#include <array>
#include <cstdint>
#include <map>
#include <vector>

/**
 * \file
 * A lean layer-3 datacenter switch: ECMP forwarding, shared-buffer MMU, ECN and PFC.
 */

namespace ns3
{

class MetaRoceNetDevice;
class Packet;

/**
 * \ingroup metaroce
 * A switch aggregated to a Node that forwards Ethernet/IPv4/UDP frames between its
 * MetaRoceNetDevice ports without ns-3's IP stack.
 *
 * Per frame, in this order (each refusal is a drop counted by cause):
 *  1. parse the headers once (metaroce::ParseFrame on a copy of the first bytes): MALFORMED;
 *  2. TTL: a frame arriving with TTL <= 1 is dropped (TTL_EXPIRED); otherwise the TTL is
 *     decremented and the IPv4 checksum updated incrementally (RFC 1624) on every hop;
 *  3. route: longest match of the destination address over host (/32) and prefix routes,
 *     giving an ECMP group of egress ports (NO_ROUTE); the member is chosen by a salted hash of
 *     the 5-tuple (source and destination address, protocol, UDP ports), so one 5-tuple always
 *     takes one port and different UDP source ports spread. Members whose link is down are
 *     skipped: a flow on a live member keeps it, a flow hashed to a dead member is rehashed over
 *     the live ones (resilient hashing); with no live member the frame is dropped (LINK_DOWN);
 *  4. priority: the egress port maps the DSCP (MetaRoceNetDevice::GetPriorityForDscp);
 *  5. admission to the shared buffer of BufferSize bytes: BUFFER_FULL if the frame does not
 *     fit; QUEUE_THRESHOLD if the egress queue (port, priority) would exceed
 *     DtAlpha * (free buffer) (dynamic threshold); PFC-protected (lossless) priorities skip the
 *     dynamic threshold;
 *  6. ECN: with the egress queue holding q bytes (before this frame), an ECN-capable frame is
 *     marked CE with probability 0 if q <= EcnKmin, 1 if q > EcnKmax, and
 *     EcnPmax * (q - EcnKmin) / (EcnKmax - EcnKmin) in between; EcnKmin == EcnKmax is a
 *     DCTCP-style step (mark iff q > K). Not-ECT frames are never marked;
 *  7. the Ethernet addresses are rewritten (egress port to its peer), as a router does;
 *  8. the frame is queued on the egress port; its bytes stay charged to the buffer and to its
 *     ingress port until it leaves the queue.
 *
 * PFC (PfcEnabled, for the RoCEv2 baseline): per ingress port and priority the switch counts
 * the buffered bytes that came in through that port. When the count of a priority in
 * PfcPriorities exceeds PfcXoffThreshold, it sends an XOFF PFC frame (PfcPauseQuanta) out of
 * that ingress port and refreshes it every half pause time; when the count falls to
 * PfcXonThreshold or below it sends XON (quanta 0). The buffer must leave headroom for the
 * bytes in flight after an XOFF (about 2 x delay x rate + 2 MTU per port).
 */
class MetaRoceSwitch : public Object, public MetaRocePortOwner
{
  public:
    /// Shared-buffer size presets (used when BufferSize is 0).
    enum BufferPreset
    {
        SHALLOW, //!< SHALLOW_BUFFER_PER_PORT per port (16 MiB for 32 ports)
        DEEP,    //!< DEEP_BUFFER_PER_PORT per port (2 GiB for 32 ports)
    };

    /// Shallow preset per port: 16 MiB for a 32-port switch (Tomahawk / Trident class).
    static constexpr uint64_t SHALLOW_BUFFER_PER_PORT = 512 * 1024;
    /// Deep preset per port: 2 GiB for a 32-port switch (Jericho / HBM class).
    static constexpr uint64_t DEEP_BUFFER_PER_PORT = 64 * 1024 * 1024;
    /// Returned by SelectEgressPort when no port can take the frame.
    static constexpr uint32_t NO_PORT = 0xffffffff;

    /// Switch-wide or per-port counters (per port: drops and frames by ingress port, enqueued
    /// and ECN marks by egress port, pauses by the port that sent or received them).
    struct Counters
    {
        uint64_t rxFrames{0};         //!< frames received
        uint64_t rxBytes{0};          //!< their bytes
        uint64_t enqueuedFrames{0};   //!< frames admitted to an egress queue
        uint64_t enqueuedBytes{0};    //!< their bytes
        uint64_t ecnMarked{0};        //!< frames marked CE
        uint64_t pfcPauseSent{0};     //!< XOFF frames sent (refreshes included)
        uint64_t pfcResumeSent{0};    //!< XON frames sent
        uint64_t pfcPauseReceived{0}; //!< PFC frames received
        std::array<uint64_t, METAROCE_DROP_REASON_COUNT> drops{}; //!< drops by cause

        /// \return the sum of drops over all causes.
        uint64_t TotalDrops() const;
        /**
         * \param reason a cause
         * \return the drops of that cause
         */
        uint64_t Drops(MetaRoceDropReason reason) const;
    };

    /// TracedCallback signature of drops: (frame, ingress port, cause).
    typedef void (*DropTracedCallback)(Ptr<const Packet> frame,
                                       uint32_t inPort,
                                       MetaRoceDropReason reason);
    /// TracedCallback signature of forwarding: (frame, ingress port, egress port, priority).
    typedef void (*ForwardTracedCallback)(Ptr<const Packet> frame,
                                          uint32_t inPort,
                                          uint32_t outPort,
                                          uint8_t priority);
    /// TracedCallback signature of ECN marks: (frame, egress port, queue bytes before it).
    typedef void (*EcnMarkTracedCallback)(Ptr<const Packet> frame,
                                          uint32_t outPort,
                                          uint64_t queueBytes);
    /// TracedCallback signature of PFC frames: (port, priority, quanta; 0 = XON).
    typedef void (*PfcTracedCallback)(uint32_t port, uint8_t priority, uint16_t quanta);

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceSwitch();
    ~MetaRoceSwitch() override;

    /**
     * Take over a port: the switch becomes its frame receiver and buffer owner. The device
     * must already be on the switch's node.
     * \param port the device
     * \return its port index
     */
    uint32_t AddPort(Ptr<MetaRoceNetDevice> port);

    /// \return the number of ports.
    uint32_t GetNPorts() const;

    /**
     * \param index a port index
     * \return the port
     */
    Ptr<MetaRoceNetDevice> GetPort(uint32_t index) const;

    /**
     * \param port a device
     * \return its port index, or NO_PORT
     */
    uint32_t GetPortIndex(Ptr<const MetaRoceNetDevice> port) const;

    /**
     * Register an ECMP group (identical groups share one index).
     * \param ports port indices (order matters for the hash)
     * \return the group index
     */
    uint32_t AddEcmpGroup(const std::vector<uint32_t>& ports);

    /**
     * Route a destination prefix to an ECMP group.
     * \param dst destination address, host order
     * \param prefixLength 0 to 32 (32 = host route)
     * \param group from AddEcmpGroup()
     */
    void AddRoute(uint32_t dst, uint8_t prefixLength, uint32_t group);

    /**
     * Route a destination prefix to a set of equal-cost ports.
     * \param dst destination address, host order
     * \param prefixLength 0 to 32
     * \param ports port indices
     */
    void AddRoute(uint32_t dst, uint8_t prefixLength, const std::vector<uint32_t>& ports);

    /// Remove every route and group.
    void ClearRoutes();

    /**
     * \param dst destination address, host order
     * \return the ports of the longest matching route, or nullptr
     */
    const std::vector<uint32_t>* LookupRoute(uint32_t dst) const;

    /**
     * Choose the egress port of a 5-tuple (step 3 above).
     * \param meta addresses and UDP ports (the protocol is UDP)
     * \param[out] reason NO_ROUTE or LINK_DOWN when NO_PORT is returned
     * \return the port index, or NO_PORT
     */
    uint32_t SelectEgressPort(const metaroce::DatagramMeta& meta, MetaRoceDropReason& reason) const;

    /**
     * The salted ECMP hash.
     * \param meta addresses and UDP ports
     * \return the hash
     */
    uint64_t HashFiveTuple(const metaroce::DatagramMeta& meta) const;

    /// \return the shared buffer size in bytes (BufferSize, or the preset times the ports).
    uint64_t GetBufferSize() const;

    /// \return the bytes currently held in the shared buffer.
    uint64_t GetBufferUsed() const;

    /**
     * \param port ingress port index
     * \param priority priority class
     * \return the buffered bytes that came in through that port at that priority
     */
    uint64_t GetIngressBytes(uint32_t port, uint8_t priority) const;

    /// \return the switch-wide counters.
    const Counters& GetCounters() const;

    /**
     * \param port a port index
     * \return the counters of that port
     */
    const Counters& GetPortCounters(uint32_t port) const;

    /**
     * Assign a fixed random variable stream (ECN marking).
     * \param stream the stream index
     * \return the number of streams used (1)
     */
    int64_t AssignStreams(int64_t stream);

    /**
     * Process a frame received on a port (the ports' frame receive callback).
     * \param port the ingress device
     * \param frame the frame
     */
    void ReceiveFrame(Ptr<MetaRoceNetDevice> port, Ptr<Packet> frame);

  protected:
    void DoDispose() override;

  private:
    // Ordered so that forwarding a frame touches two cache lines of its ingress and of its
    // egress port state: what every frame reads first, then the counters, the PFC refresh
    // events last.
    /// State of one port.
    struct alignas(64) PortState
    {
        Ptr<MetaRoceNetDevice> device;          //!< the device
        uint8_t mac[6]{};                       //!< own MAC
        uint8_t peerMac[6]{};                   //!< peer MAC
        bool macsKnown{false};                  //!< macs set
        std::array<bool, 8> pauseActive{};      //!< XOFF sent
        std::array<uint64_t, 8> ingressBytes{}; //!< PFC counts
        Counters counters;                      //!< counters
        std::array<EventId, 8> pauseRefresh;    //!< refreshes
    };

    /// One slot of the open-addressing host route table.
    struct HostRouteSlot
    {
        uint32_t address; //!< destination address
        uint32_t group;   //!< ECMP group, or EMPTY_SLOT
    };

    /// Marks an unused HostRouteSlot.
    static constexpr uint32_t EMPTY_SLOT = 0xffffffff;

    /// A prefix route.
    struct PrefixRoute
    {
        uint32_t prefix; //!< masked destination
        uint32_t mask;   //!< network mask
        uint8_t length;  //!< prefix length
        uint32_t group;  //!< ECMP group
    };

    /**
     * Process a frame received on a port (bound per port).
     * \param inPort the ingress port index
     * \param port the ingress device
     * \param frame the frame
     */
    void ReceiveOnPort(uint32_t inPort, Ptr<MetaRoceNetDevice> port, Ptr<Packet> frame);
    /**
     * Process a frame received on a port, with its record (MetaRocePortOwner; the ports call
     * it through MetaRoceNetDevice::SetPortOwner). A valid record spares reading the header
     * bytes; this hop's rewrites are added to it, not written (steps 1, 2 and 7 above then
     * work on the record).
     * \param inPort the ingress port index
     * \param port the ingress device
     * \param frame the frame
     * \param info its record (filled from the bytes when not valid)
     */
    void ReceiveFromPort(uint32_t inPort,
                         MetaRoceNetDevice* port,
                         Ptr<Packet> frame,
                         MetaRoceFrameInfo& info) override;
    /**
     * A queued frame left its egress queue (MetaRocePortOwner).
     * \param egress the egress device
     * \param frame the frame
     * \param priority its priority
     * \param inPort its ingress port (the cookie)
     */
    void DequeuedFromPort(MetaRoceNetDevice* egress,
                          Ptr<const Packet> frame,
                          uint8_t priority,
                          uint32_t inPort) override;
    /**
     * The dequeue callback of the ports: DequeuedFromPort.
     * \param egress the egress device
     * \param frame the frame
     * \param priority its priority
     * \param inPort its ingress port (the cookie)
     */
    void FrameDequeued(Ptr<MetaRoceNetDevice> egress,
                       Ptr<const Packet> frame,
                       uint8_t priority,
                       uint32_t inPort);
    /**
     * Count and trace a drop.
     * \param frame the frame
     * \param inPort its ingress port
     * \param reason why
     */
    void Drop(Ptr<const Packet> frame, uint32_t inPort, MetaRoceDropReason reason);
    /**
     * Count and trace a drop of a frame with a record (its pending rewrites are written first).
     * \param frame the frame
     * \param info its record
     * \param inPort its ingress port
     * \param reason why
     */
    void Drop(Ptr<Packet> frame,
              MetaRoceFrameInfo& info,
              uint32_t inPort,
              MetaRoceDropReason reason);
    /**
     * A port's link went up or down: refresh its entry of m_portUp.
     * \param port the port index
     */
    void PortLinkChanged(uint32_t port);
    /**
     * \param dst destination address, host order
     * \return the ECMP group of the route to \p dst, or EMPTY_SLOT if there is none
     */
    uint32_t LookupGroup(uint32_t dst) const;
    /**
     * Send a PFC frame out of a port.
     * \param port the port index
     * \param priority the priority
     * \param quanta pause quanta (0 = XON)
     */
    void SendPfc(uint32_t port, uint8_t priority, uint16_t quanta);
    /**
     * Re-send XOFF while an ingress queue stays over its threshold.
     * \param port the port index
     * \param priority the priority
     */
    void RefreshPause(uint32_t port, uint8_t priority);
    /**
     * A port received a PFC frame.
     * \param port the port index
     * \param priority the priority
     * \param quanta the quanta
     */
    void PauseReceived(uint32_t port, uint8_t priority, uint16_t quanta);
    /**
     * \param address a destination address
     * \return its home slot index in m_hostRoutes (size must be a power of two)
     */
    uint32_t HostRouteHome(uint32_t address) const;
    /**
     * Insert or replace a host route.
     * \param address destination address
     * \param group ECMP group
     */
    void InsertHostRoute(uint32_t address, uint32_t group);
    /// Recompute m_saltKey from the salt and the node id.
    void UpdateSaltKey();
    /**
     * \param priority a priority class
     * \return true if PFC protects it
     */
    bool IsLossless(uint8_t priority) const;

    // Attributes
    uint64_t m_bufferSize{0};             //!< BufferSize (0 = from the preset)
    BufferPreset m_bufferPreset{SHALLOW}; //!< BufferPreset
    double m_dtAlpha{1.0};                //!< DtAlpha
    bool m_ecnEnabled{true};              //!< EcnEnabled
    uint64_t m_ecnKmin{100000};           //!< EcnKmin
    uint64_t m_ecnKmax{400000};           //!< EcnKmax
    double m_ecnPmax{0.2};                //!< EcnPmax
    bool m_pfcEnabled{false};             //!< PfcEnabled
    uint8_t m_pfcPriorities{0x08};        //!< PfcPriorities
    uint64_t m_pfcXoff{96 * 1024};        //!< PfcXoffThreshold
    uint64_t m_pfcXon{64 * 1024};         //!< PfcXonThreshold
    uint16_t m_pfcPauseQuanta{0xffff};    //!< PfcPauseQuanta
    uint32_t m_ecmpSalt{0};               //!< EcmpSalt

    std::vector<PortState> m_ports; //!< ports by index
    // /32 routes in a flat open-addressing table (linear probing, load <= 1/2): one or two
    // cache lines per lookup, where a node-based map costs a miss per chain node.
    std::vector<HostRouteSlot> m_hostRoutes;     //!< /32 routes: dst -> group
    uint32_t m_hostRouteCount{0};                //!< used slots
    uint64_t m_saltKey{0};                       //!< salt mixed with the node id
    std::vector<PrefixRoute> m_prefixRoutes;     //!< longest prefix first
    std::vector<std::vector<uint32_t>> m_groups; //!< ECMP groups
    // The forwarding path reads groups and port states from these flat copies: a group's
    // members sit in one array and link states in one byte per port, so that choosing an
    // egress port touches neither a per-group heap block nor the port devices.
    std::vector<uint64_t> m_groupSpans; //!< per group: first member index << 32 | size
    std::vector<uint32_t> m_groupPorts; //!< members of every group, group after group
    std::vector<uint8_t> m_portUp;      //!< link state of each port (1 = up)
    std::map<std::vector<uint32_t>, uint32_t> m_groupIndex; //!< group interning
    Ptr<UniformRandomVariable> m_uniform;                   //!< ECN marking draws
    TracedValue<uint64_t> m_bufferUsed{0};                  //!< shared buffer occupancy
    Counters m_counters;                                    //!< switch-wide counters

    TracedCallback<Ptr<const Packet>, uint32_t, MetaRoceDropReason> m_dropTrace;   //!< drops
    TracedCallback<Ptr<const Packet>, uint32_t, uint32_t, uint8_t> m_forwardTrace; //!< enqueues
    TracedCallback<Ptr<const Packet>, uint32_t, uint64_t> m_ecnMarkTrace;          //!< CE marks
    TracedCallback<uint32_t, uint8_t, uint16_t> m_pfcSentTrace;                    //!< PFC sent
    TracedCallback<uint32_t, uint8_t, uint16_t> m_pfcReceivedTrace;                //!< PFC received
};

} // namespace ns3

#endif // METAROCE_SWITCH_H
