/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_NIC_H
#define METAROCE_NIC_H

#include "metaroce-endpoint.h"
#include "metaroce-frame.h"
#include "metaroce-port-owner.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * The host NIC: one sans-I/O metaroce::Endpoint driven by ns-3 events over the host's
 * MetaRoceNetDevice ports (one per plane).
 */

namespace ns3
{

class MetaRoceNetDevice;
class Node;

/// What the Tx and Rx traces of MetaRoceNic report about one datagram.
struct MetaRoceDatagramInfo
{
    uint32_t qpn{0};     //!< local connection (QP number)
    int16_t pathId{-1};  //!< MetaRoCE path (MDH/MAH/MNH), -1 for RoCEv2 and CNPs
    uint32_t psn{0};     //!< BTH PSN
    uint8_t opcode{0};   //!< BTH opcode
    uint32_t length{0};  //!< datagram bytes (BTH to ICRC)
    uint32_t port{0};    //!< index of the NIC port (plane) it used
    uint16_t srcPort{0}; //!< UDP source port (ECMP entropy)
};

/// What the PathEvent trace of MetaRoceNic reports.
struct MetaRocePathEventInfo
{
    uint32_t qpn{0};                                           //!< local connection
    metaroce::PathEvent event{metaroce::PathEvent::WINDOW};    //!< what happened
    uint8_t pathId{0};                                         //!< path index
    metaroce::PathStatus status{metaroce::PathStatus::ACTIVE}; //!< path health after it
    double cwnd{0};                                            //!< path window, packets
    uint32_t inflight{0};                                      //!< packets in flight on the path
    Time srtt;                                                 //!< smoothed RTT (0 before a sample)
    Time latestRtt;                                            //!< latest RTT sample
    uint16_t sourcePort{0};                                    //!< UDP source port of the path
};

/**
 * \ingroup metaroce
 * A host NIC running the MetaRoCE / RoCEv2 engine: its ns-3 adapter. It shares the engine and
 * the frame encapsulation with the HIL daemon, not the pump code: the daemon's pump pushes
 * datagrams into a kernel queue, this one is pulled by idle ports (doc/metaroce-nic.rst).
 *
 * The NIC is aggregated to a host Node and owns one metaroce::Endpoint. It drives the host's
 * MetaRoceNetDevice ports (one per plane) in pull mode. After every input (a frame received,
 * a work request posted, the timer) it runs the pump: deliver completions, wake idle ports
 * (MetaRoceNetDevice::NotifyPullReady) and re-arm its one timer at Endpoint::NextTimeout()
 * (the ns-3 event is cancelled and rescheduled only when the deadline changes).
 *
 * Transmit is pulled: when a port's transmitter is idle it asks the NIC for a frame, and the
 * NIC calls Endpoint::PollTransmit(). A datagram belongs to a plane: TxDatagram::pathId maps
 * to port pathId % ports; a datagram without a path (RoCEv2, CNPs) maps to a port chosen by a
 * hash of its connection, so a RoCEv2 QP stays on one plane. A datagram polled for another
 * port is parked in that port's FIFO and that port is woken, so frames are never reordered
 * within a port. Parked frames are bounded by the engine's windows; frames parked for a port
 * whose link is down are dropped (as a real port would). The datagram is encapsulated by
 * metaroce::EncapsulateFrame (source MAC = the port, destination MAC = the port's peer).
 *
 * PFC: a port whose data priority (the device's mapping of the datagram's DSCP) is paused is
 * not asked for new datagrams; a parked frame of a paused priority waits. The device pulls
 * again when the pause ends.
 *
 * Receive: each frame is parsed once (metaroce::ParseFrame) and handed to
 * Endpoint::HandleDatagram().
 *
 * Engine settings are Attributes: the EndpointConfig fields, and the default ConnectionConfig
 * (GetDefaultConnectionConfig()) used by CreateConnection() without an explicit config. The
 * endpoint is created on first use (the first RegisterMemory / CreateConnection / Start), so
 * endpoint attributes and AssignStreams() must be set before; later changes to them have no
 * effect. Connection attributes may change at any time and apply to later connections.
 */
class MetaRoceNic : public Object, public MetaRocePortOwner
{
  public:
    /// Completion callback: (NIC, completion).
    typedef Callback<void, Ptr<MetaRoceNic>, const metaroce::Completion&> CompletionCallback;
    /// TracedCallback signature of Tx / Rx datagrams.
    typedef void (*DatagramTracedCallback)(const MetaRoceDatagramInfo& info);
    /// TracedCallback signature of completions.
    typedef void (*CompletionTracedCallback)(const metaroce::Completion& completion);
    /// TracedCallback signature of path events.
    typedef void (*PathEventTracedCallback)(const MetaRocePathEventInfo& info);
    /// TracedCallback signature of rate changes: (qpn, bits per second; 0 = unlimited).
    typedef void (*RateChangeTracedCallback)(uint32_t qpn, double bitsPerSecond);

    /*
     * The choices of the attributes that choose an engine policy. Each attribute is an
     * EnumValue whose names are the engine's, from its one registry (metaroce::PolicyNames in
     * metaroce-policy-names.h): enum value i is the registry's name i, so StringValue("rocev2")
     * and EnumValue(MetaRoceNic::TRANSPORT_ROCEV2) set the same thing, and a name the registry
     * does not have fails when it is set. GetTypeId aborts if a registry and its enum differ in
     * length (a policy added to the engine needs its value here).
     */

    /// Transport attribute (metaroce::PolicyKind::TRANSPORT).
    enum Transport
    {
        TRANSPORT_METAROCE, //!< "metaroce"
        TRANSPORT_ROCEV2,   //!< "rocev2"
    };

    /// CongestionControl attribute (metaroce::PolicyKind::CONGESTION_CONTROL).
    enum CongestionControl
    {
        CC_AIMD,  //!< "aimd"
        CC_DCTCP, //!< "dctcp"
        CC_FIXED, //!< "fixed"
    };

    /// PathScheduler attribute (metaroce::PolicyKind::PATH_SCHEDULER).
    enum PathScheduler
    {
        PATH_SCHEDULER_SPRAY,  //!< "spray"
        PATH_SCHEDULER_SINGLE, //!< "single"
    };

    /// LossDetection attribute (metaroce::PolicyKind::LOSS_DETECTION).
    enum LossDetection
    {
        LOSS_DETECTION_SACK_GAP,     //!< "sack-gap": SACK gaps of a path only (the default)
        LOSS_DETECTION_RACK,         //!< "rack": time-based, across paths
        LOSS_DETECTION_RACK_TAIL,    //!< "rack-tail": time-based at the connection's tail only
        LOSS_DETECTION_RACK_CONFIRM, //!< "rack-confirm": time-based suspects a probe confirms
    };

    /// TailProbe attribute (metaroce::PolicyKind::TAIL_PROBE).
    enum TailProbe
    {
        TAIL_PROBE_TLP,     //!< "tlp": tail-loss probe
        TAIL_PROBE_NONE,    //!< "none"
        TAIL_PROBE_TLP_RTO, //!< "tlp-rto": "tlp", and again after each timeout
    };

    /// FailureDetection attribute (metaroce::PolicyKind::FAILURE_DETECTION).
    enum FailureDetection
    {
        FAILURE_DETECTION_CROSS_PATH, //!< "cross-path": evidence from the other paths
        FAILURE_DETECTION_RTO,        //!< "rto": the RTO only
    };

    /// RtoPolicy attribute (metaroce::PolicyKind::RTO_POLICY).
    enum RtoPolicy
    {
        RTO_POLICY_ADAPTIVE, //!< "adaptive": floor from the minimum RTT
        RTO_POLICY_FIXED,    //!< "fixed": RtoMin floor
    };

    /// InitialWindow attribute (metaroce::PolicyKind::INITIAL_WINDOW).
    enum InitialWindow
    {
        INITIAL_WINDOW_PER_CONNECTION, //!< "per-connection"
        INITIAL_WINDOW_PER_PATH,       //!< "per-path"
        INITIAL_WINDOW_BDP,            //!< "bdp"
    };

    /// AckPolicy attribute (metaroce::PolicyKind::ACK_POLICY).
    enum AckPolicy
    {
        ACK_POLICY_COALESCED, //!< "coalesced": one ACK per connection, a record per path
        ACK_POLICY_PER_PATH,  //!< "per-path": one ACK per path
    };

    /// ReturnWindow attribute (metaroce::PolicyKind::RETURN_WINDOW).
    enum ReturnWindow
    {
        RETURN_WINDOW_SHARE,   //!< "share": the mean window of the other active paths
        RETURN_WINDOW_INITIAL, //!< "initial": InitialPathWindow
    };

    /// ConfirmHold attribute (metaroce::PolicyKind::CONFIRM_HOLD).
    enum ConfirmHold
    {
        CONFIRM_HOLD_NONE, //!< "none": a path awaiting a confirmation keeps taking its share
        CONFIRM_HOLD_HOLD, //!< "hold": it takes no packet while another path has room
    };

    /// RoceRecovery attribute (metaroce::PolicyKind::ROCE_RECOVERY).
    enum RoceRecovery
    {
        ROCE_RECOVERY_GBN, //!< "gbn": go-back-N
        ROCE_RECOVERY_IRN, //!< "irn": IRN selective repeat
    };

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceNic();
    ~MetaRoceNic() override;

    /**
     * Attach the NIC to its host: take over the ports' pull and frame receive callbacks.
     * Call once, before any other method.
     * \param node the host node (the NIC is aggregated to it)
     * \param address the host's IPv4 address, host order
     * \param ports the host's ports, one per plane
     */
    void Setup(Ptr<Node> node, uint32_t address, std::vector<Ptr<MetaRoceNetDevice>> ports);

    /// \return the host's IPv4 address, host order.
    uint32_t GetAddress() const;

    /// \return the host node.
    Ptr<Node> GetNode() const;

    /// \return the number of ports (planes).
    uint32_t GetNPorts() const;

    /**
     * \param i port index
     * \return the port
     */
    Ptr<MetaRoceNetDevice> GetPort(uint32_t i) const;

    /// \return the line rate of the endpoint: LineRate, or the sum of the port rates.
    double GetLineRateBps() const;

    /// \return the engine (created on first call).
    metaroce::Endpoint& GetEndpoint();

    /// \return the default connection configuration (from the connection Attributes).
    metaroce::ConnectionConfig GetDefaultConnectionConfig() const;

    /**
     * Set every connection Attribute from \p cfg.
     * \param cfg the new defaults
     */
    void SetDefaultConnectionConfig(const metaroce::ConnectionConfig& cfg);

    /**
     * Register memory (ibv_reg_mr). \p base may be nullptr: a virtual region with addresses
     * and keys but no bytes (reads give zeros, writes are discarded), so large transfers cost
     * no memory.
     * \param base host bytes or nullptr
     * \param length bytes
     * \param access metaroce::AccessFlags
     * \return the region (lkey 0 on failure)
     */
    metaroce::MemoryRegion RegisterMemory(void* base, uint64_t length, uint32_t access);

    /**
     * Deregister a region.
     * \param lkey its local key
     * \return false if unknown
     */
    bool DeregisterMemory(uint32_t lkey);

    /**
     * Create a connection with the default configuration.
     * \param[out] qpn its number
     * \return the status
     */
    metaroce::PostStatus CreateConnection(uint32_t& qpn);

    /**
     * Create a connection.
     * \param cfg its configuration
     * \param[out] qpn its number
     * \param[out] why reason of an INVALID_ARGUMENT (may be nullptr)
     * \return the status
     */
    metaroce::PostStatus CreateConnection(const metaroce::ConnectionConfig& cfg,
                                          uint32_t& qpn,
                                          std::string* why = nullptr);

    /**
     * Bind a connection to its peer.
     * \param qpn local connection
     * \param remoteIp peer address, host order
     * \param remoteQpn peer connection
     * \return the status
     */
    metaroce::PostStatus Connect(uint32_t qpn, uint32_t remoteIp, uint32_t remoteQpn);

    /**
     * Post a send work request (ibv_post_send) and run the pump.
     * \param qpn connection
     * \param wr the work request
     * \return the status
     */
    metaroce::PostStatus PostSend(uint32_t qpn, const metaroce::SendWr& wr);

    /**
     * Post a receive work request (ibv_post_recv) and run the pump.
     * \param qpn connection
     * \param wr the work request
     * \return the status
     */
    metaroce::PostStatus PostRecv(uint32_t qpn, const metaroce::RecvWr& wr);

    /**
     * Set the callback that receives every completion (in addition to the trace).
     * \param callback the callback; the NIC may be posted to from within it
     */
    void SetCompletionCallback(CompletionCallback callback);

    /// \return the engine's endpoint-wide counters.
    const metaroce::CounterSet& GetEngineCounters();

    /// \return frames dropped because they were parked for a port whose link is down.
    uint64_t GetParkedDrops() const;

    /**
     * Assign a fixed random variable stream (the engine seed is drawn from it when Seed is 0).
     * Call before the endpoint is created.
     * \param stream the stream index
     * \return the number of streams used (1)
     */
    int64_t AssignStreams(int64_t stream);

    /**
     * \param t an ns-3 time
     * \return it in engine time (picoseconds)
     */
    static metaroce::Time ToEngineTime(Time t);

    /**
     * \param t an engine time (picoseconds)
     * \return it as an ns-3 time, rounded up to the simulator's resolution
     */
    static Time FromEngineTime(metaroce::Time t);

  protected:
    void DoDispose() override;

  private:
    class Observer;
    friend class Observer;

    /// One port and the frames parked for it.
    struct PortState
    {
        Ptr<MetaRoceNetDevice> device;      //!< the port
        std::deque<Ptr<Packet>> parked;     //!< frames polled for this port, in order
        std::deque<uint8_t> parkedPriority; //!< their priorities
        bool inPull{false};                 //!< its pull callback is on the stack
        bool macsKnown{false};              //!< mac and peerMac are set (first frame)
        metaroce::MacAddress mac;           //!< the port's MAC address
        metaroce::MacAddress peerMac;       //!< the MAC address of its peer
    };

    /**
     * \param receive true for the received frames' buffer, false for frames under construction
     * \return that buffer of this thread
     */
    static std::vector<uint8_t>& Scratch(bool receive);
    /// Create the endpoint if it does not exist yet.
    void EnsureEndpoint();
    /// The pump: completions, wake ports, re-arm the timer.
    void Pump();
    /// Deliver every pending completion.
    void DrainCompletions();
    /// Re-arm the one timer at Endpoint::NextTimeout().
    void RearmTimer();
    /// The timer fired.
    void Timeout();
    /// Deliver completions collected outside the pump.
    void DeferredPump();
    /**
     * Pull callback of a port.
     * \param port port index
     * \return the next frame for it, or nullptr
     */
    Ptr<Packet> Pull(uint32_t port);
    /**
     * Pull with the frame's record (MetaRocePortOwner; the ports call it through
     * MetaRoceNetDevice::SetPortOwner).
     * \param port port index
     * \param[out] info the record of the frame returned (left not valid for a parked frame)
     * \return the next frame for it, or nullptr
     */
    Ptr<Packet> PullForPort(uint32_t port, MetaRoceFrameInfo& info) override;
    /**
     * Frame receive callback of the ports.
     * \param device the port
     * \param frame the frame
     */
    void Receive(Ptr<MetaRoceNetDevice> device, Ptr<Packet> frame);
    /**
     * A port received a frame with its record (MetaRocePortOwner; the ports call it through
     * MetaRoceNetDevice::SetPortOwner): the record's pending rewrites are applied to the NIC's
     * copy of the bytes, not to the packet.
     * \param port the port index (unused: the receive trace finds the port from \p device)
     * \param device the port
     * \param frame the frame
     * \param info its record (not changed)
     */
    void ReceiveFromPort(uint32_t port,
                         MetaRoceNetDevice* device,
                         Ptr<Packet> frame,
                         MetaRoceFrameInfo& info) override;
    /**
     * \param tx a polled datagram
     * \return the index of the port it belongs to
     */
    uint32_t PortOf(const metaroce::TxDatagram& tx) const;
    /**
     * Fill a datagram trace record.
     * \param data datagram bytes
     * \param len their number
     * \param qpn local connection
     * \param pathId path
     * \param port port index
     * \param srcPort UDP source port
     * \return the record
     */
    static MetaRoceDatagramInfo Describe(const uint8_t* data,
                                         size_t len,
                                         uint32_t qpn,
                                         int16_t pathId,
                                         uint32_t port,
                                         uint16_t srcPort);

    // Endpoint configuration (Attributes) and default connection configuration.
    metaroce::EndpointConfig m_endpointConfig;     //!< endpoint Attributes
    metaroce::ConnectionConfig m_connectionConfig; //!< default connection Attributes
    double m_lineRateAttribute{0};                 //!< LineRate (0 = sum of port rates)

    Ptr<Node> m_node;                               //!< host node
    uint32_t m_address{0};                          //!< IPv4 address
    std::vector<PortState> m_ports;                 //!< ports by plane
    std::unique_ptr<metaroce::Endpoint> m_endpoint; //!< the engine
    std::unique_ptr<Observer> m_observer;           //!< observer turning calls into traces
    Ptr<UniformRandomVariable> m_seedStream;        //!< draws the engine seed
    // No NIC holds a frame in these across an input, so every NIC of a thread shares one pair
    // (1,024 NICs held 8.9 MB of private buffers). They only grow.
    std::vector<uint8_t>& m_txBuffer{Scratch(false)}; //!< frame under construction (shared)
    std::vector<uint8_t>& m_rxBuffer{Scratch(true)};  //!< frame being parsed (shared)
    Ptr<EventImpl> m_timer;                           //!< the one engine timer (cancelled in place)
    metaroce::Time m_timerAt{metaroce::TIME_INFINITE};  //!< its deadline
    bool m_inPump{false};                               //!< Pump() is on the stack
    bool m_pumpAgain{false};                            //!< an input arrived during the pump
    uint32_t m_pullDepth{0};                            //!< pull callbacks on the stack
    bool m_deferredScheduled{false};                    //!< DeferredPump() is scheduled
    uint64_t m_parkedDrops{0};                          //!< frames dropped for dead ports
    CompletionCallback m_completionCallback;            //!< user callback
    std::deque<metaroce::Completion> m_heldCompletions; //!< polled during a pull, not delivered

    TracedCallback<const MetaRoceDatagramInfo&> m_txTrace;         //!< datagram sent
    TracedCallback<const MetaRoceDatagramInfo&> m_rxTrace;         //!< datagram received
    TracedCallback<const metaroce::Completion&> m_completionTrace; //!< completion
    TracedCallback<const MetaRocePathEventInfo&> m_pathEventTrace; //!< path event
    TracedCallback<uint32_t, double> m_rateChangeTrace;            //!< rate change
};

} // namespace ns3

#endif // METAROCE_NIC_H
