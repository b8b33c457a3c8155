/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_NET_DEVICE_H
#define METAROCE_NET_DEVICE_H

#include "metaroce-frame.h"
#include "metaroce-packet-fifo.h"

#include "ns3/callback.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"
#include "ns3/traced-value.h"

#include <array>
#include <cstdint>

/**
 * \file
 * One Ethernet port of a MetaRoCE host NIC or switch.
 */

namespace ns3
{

class MetaRoceChannel;
class MetaRocePortOwner;
class Node;

/**
 * \ingroup metaroce
 * One full-duplex Ethernet port on a point-to-point MetaRoceChannel.
 *
 * Frames are real Ethernet II bytes (header included) in an ns3::Packet; the device never runs
 * ns-3's protocol stack per frame. Both host NICs and switches use it.
 *
 * Transmit side: per-priority FIFO egress queues served in strict priority (higher value
 * first) plus a MAC control queue for PFC pause frames that goes before all of them (a pause
 * waits only for the frame already on the wire). A frame is serialized at DataRate, counting
 * its bytes padded to 60 plus WireOverhead (FCS, preamble, inter-frame gap), then crosses the
 * channel delay. The owner feeds the device in one of two modes:
 *  - push: Enqueue() (switches; the owner runs its own admission and buffer accounting and
 *    learns when a frame leaves its queue from the dequeue callback);
 *  - pull: SetPullCallback(). When the transmitter goes idle with nothing queued, the device
 *    asks the callback for the next frame (hosts, so the NIC scheduler decides what goes next);
 *    the owner calls NotifyPullReady() when it has something new for an idle port.
 *
 * Receive side: IEEE 802.1Qbb PFC frames (and 802.3x PAUSE) are consumed by the MAC; every
 * other frame goes to the frame receive callback (or, if none is set, to ns-3's receive
 * callback with the Ethernet header removed, so standard tooling works).
 *
 * PFC reaction: a PFC frame pauses each priority whose class-enable bit is set for its quanta
 * (one quantum = 512 bit times at DataRate); quanta 0 resumes (XON). Pulled frames are
 * classified by their DSCP (DataPriority / ControlDscp / ControlPriority); a pulled frame of a
 * paused priority waits in that priority's queue. Hosts should consult IsPaused() or
 * GetPausedMask() so they do not offer frames of a paused priority.
 *
 * A link that is down (SetLinkUp(false)) drops everything queued and in flight and sends
 * nothing until it comes back.
 */
class MetaRoceNetDevice : public NetDevice
{
  public:
    /// Frame receive callback: (receiving device, frame with its Ethernet header).
    typedef Callback<void, Ptr<MetaRoceNetDevice>, Ptr<Packet>> FrameReceiveCallback;
    /// Pull callback: returns the next frame to send, or nullptr when there is none.
    typedef Callback<Ptr<Packet>> PullCallback;
    /// Admission callback: (device, frame, priority) -> accept?
    typedef Callback<bool, Ptr<MetaRoceNetDevice>, Ptr<const Packet>, uint8_t> AdmissionCallback;
    /**
     * Dequeue callback: (device, frame, priority, cookie), called when a frame given to
     * Enqueue() leaves its queue, to start transmission or because the link went down.
     */
    typedef Callback<void, Ptr<MetaRoceNetDevice>, Ptr<const Packet>, uint8_t, uint32_t>
        DequeueCallback;

    /// TracedCallback signature of drops: (frame, reason).
    typedef void (*DropTracedCallback)(Ptr<const Packet> frame, MetaRoceDropReason reason);
    /// TracedCallback signature of PFC events: (priority, quanta).
    typedef void (*PfcTracedCallback)(uint8_t priority, uint16_t quanta);

    /// Most priority classes a device supports (the 802.1Qbb class-enable vector has eight).
    static constexpr uint32_t MAX_PRIORITIES = 8;
    /// EtherType of MAC control frames (802.3x PAUSE and 802.1Qbb PFC).
    static constexpr uint16_t ETHERTYPE_MAC_CONTROL = 0x8808;
    /// MAC control opcode of an 802.3x PAUSE (all priorities).
    static constexpr uint16_t OPCODE_PAUSE = 0x0001;
    /// MAC control opcode of an 802.1Qbb priority-based flow control frame.
    static constexpr uint16_t OPCODE_PFC = 0x0101;
    /// Size of a PFC frame without FCS (padded to the Ethernet minimum).
    static constexpr uint32_t PFC_FRAME_SIZE = 60;
    /// Bits in one pause quantum.
    static constexpr uint32_t PAUSE_QUANTUM_BITS = 512;

    /// Per-device counters.
    struct Counters
    {
        uint64_t txFrames{0};                                     //!< frames put on the wire
        uint64_t txBytes{0};                                      //!< their bytes (no overhead)
        uint64_t rxFrames{0};                                     //!< frames received
        uint64_t rxBytes{0};                                      //!< their bytes
        uint64_t pauseSent{0};                                    //!< PFC XOFF frames sent
        uint64_t resumeSent{0};                                   //!< PFC XON frames sent
        uint64_t pauseReceived{0};                                //!< PFC/PAUSE frames received
        std::array<uint64_t, METAROCE_DROP_REASON_COUNT> drops{}; //!< drops by reason

        /// \return the sum of drops over all reasons.
        uint64_t TotalDrops() const;
    };

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceNetDevice();
    ~MetaRoceNetDevice() override;

    /**
     * Connect the device to a channel (each channel takes two devices).
     * \param channel the channel
     * \return false if the channel already has two devices
     */
    bool Attach(Ptr<MetaRoceChannel> channel);

    /**
     * Push mode: queue a frame for transmission.
     * \param frame an Ethernet frame (header included)
     * \param priority its priority class (values past the last class use the last)
     * \return false if the frame was dropped (link down, too long, or admission refused)
     */
    bool Enqueue(const Ptr<Packet>& frame, uint8_t priority);

    /**
     * Push mode with an owner cookie that the dequeue callback returns.
     * \param frame an Ethernet frame (header included)
     * \param priority its priority class
     * \param cookie owner metadata (a switch passes the ingress port index)
     * \return false if the frame was dropped
     */
    bool Enqueue(const Ptr<Packet>& frame, uint8_t priority, uint32_t cookie);

    /**
     * Push mode with a cookie and the frame's record (MetaRoceSwitch: the record carries the
     * header rewrites not yet written into the bytes).
     * \param frame an Ethernet frame (header included)
     * \param priority its priority class
     * \param cookie owner metadata
     * \param info the frame's record
     * \return false if the frame was dropped
     */
    bool Enqueue(const Ptr<Packet>& frame,
                 uint8_t priority,
                 uint32_t cookie,
                 MetaRoceFrameInfo& info);

    /**
     * Pull mode: set the callback the idle transmitter asks for the next frame.
     * \param callback returns the next frame or nullptr
     */
    void SetPullCallback(PullCallback callback);

    /// Pull mode: the owner has a frame ready; an idle port pulls it now.
    void NotifyPullReady();

    /**
     * Set where received frames go (bypassing ns-3's protocol handlers).
     * \param callback called with this device and the frame
     */
    void SetFrameReceiveCallback(FrameReceiveCallback callback);

    /**
     * Set an admission check that Enqueue() consults; a refusal drops the frame (ADMISSION).
     * \param callback returns true to accept
     */
    void SetAdmissionCallback(AdmissionCallback callback);

    /**
     * Set the callback told when an enqueued frame leaves its queue.
     * \param callback the callback
     */
    void SetDequeueCallback(DequeueCallback callback);

    /**
     * Make this device port \p index of \p owner: received frames go straight to
     * MetaRocePortOwner::ReceiveFromPort, and by the owner's feed mode the idle transmitter
     * pulls from MetaRocePortOwner::PullForPort (PULL) or dequeue notifications go to
     * MetaRocePortOwner::DequeuedFromPort (PUSH), instead of through the frame receive, pull and
     * dequeue callbacks (a Callback costs several dependent loads per frame). MetaRoceNic::Setup
     * and MetaRoceSwitch::AddPort call it after setting those callbacks to the same targets.
     * Setting the frame receive callback afterwards turns the shortcut off, as does setting the
     * pull callback (PULL owner) or the dequeue callback (PUSH owner).
     * \param owner the NIC or switch, or nullptr to use the callbacks
     * \param index the port index on \p owner
     */
    void SetPortOwner(MetaRocePortOwner* owner, uint32_t index);

    /**
     * Send a PFC frame for one priority ahead of all queued data.
     * \param priority the class (0-7) whose class-enable bit is set
     * \param quanta pause time in quanta of 512 bit times; 0 resumes (XON)
     */
    void SendPause(uint8_t priority, uint16_t quanta);

    /**
     * Bring the link end up or down. Going down drops the queued frames, the frame being sent
     * and (through the channel) the frames in flight towards the peer.
     * \param up the new state
     */
    void SetLinkUp(bool up);

    /**
     * Change the line rate (a degraded link runs at a fraction of its rate).
     * \param rate the new rate
     */
    void SetDataRate(DataRate rate);

    /// \return the line rate.
    DataRate GetDataRate() const;

    /**
     * The nominal time a frame occupies the wire (padding and WireOverhead included), rounded
     * to the simulator's resolution. The transmitter itself carries the rounding remainder
     * from frame to frame, so back-to-back frames run at exactly DataRate on average.
     * \param bytes frame length without FCS
     * \return the serialization time
     */
    Time GetTransmissionTime(uint32_t bytes) const;

    /**
     * \param priority a priority class
     * \return true if received PFC currently pauses it
     */
    bool IsPaused(uint8_t priority) const;

    /// \return a bit mask of the paused priorities (bit i = priority i).
    uint8_t GetPausedMask() const;

    /// \return the bytes in the data queues (MAC control frames excluded).
    uint64_t GetQueueBytes() const;

    /**
     * \param priority a priority class
     * \return the bytes in its queue
     */
    uint64_t GetQueueBytes(uint8_t priority) const;

    /**
     * \param priority a priority class
     * \return the frames in its queue
     */
    uint32_t GetQueueFrames(uint8_t priority) const;

    /// \return the number of priority classes.
    uint32_t GetNumPriorities() const;

    /**
     * Map a DSCP to a priority class: ControlDscp maps to ControlPriority, anything else to
     * DataPriority.
     * \param dscp the 6-bit DSCP
     * \return the priority class
     */
    uint8_t GetPriorityForDscp(uint8_t dscp) const;

    /**
     * Classify a frame as pulled frames are: IPv4 frames by DSCP, others to ControlPriority.
     * \param frame an Ethernet frame
     * \return the priority class
     */
    uint8_t ClassifyFrame(Ptr<const Packet> frame) const;

    /// \return true while a frame is being serialized.
    bool IsTransmitting() const;

    /// \return the device at the other end of the channel, or nullptr.
    Ptr<MetaRoceNetDevice> GetPeer() const;

    /// \return the MAC address of the peer (broadcast if unattached).
    Mac48Address GetPeerMac() const;

    /**
     * Prefetch the fields every frame reads (for events that prefetch, MetaRocePrefetchEvent);
     * reads nothing and changes nothing.
     */
    void PrefetchFrameFields() const;

    /// \return the channel, or nullptr.
    Ptr<MetaRoceChannel> GetMetaRoceChannel() const;

    /// \return the counters.
    const Counters& GetCounters() const;

    /**
     * Called by the channel: a frame arrives.
     * \param frame the frame
     */
    void Receive(Ptr<Packet> frame);

    /**
     * Called by the channel: a frame arrives with its record (MetaRoceFrameInfo).
     * \param frame the frame
     * \param info its record
     */
    void Receive(const Ptr<Packet>& frame, MetaRoceFrameInfo& info);

    /**
     * Called by the channel: a frame towards this device was lost on the link.
     * \param frame the frame
     * \param reason CHANNEL_LOSS or LINK_DOWN
     */
    void NotifyChannelDrop(Ptr<Packet> frame, MetaRoceDropReason reason);

    // NetDevice
    void SetIfIndex(const uint32_t index) override;
    uint32_t GetIfIndex() const override;
    Ptr<Channel> GetChannel() const override;
    void SetAddress(Address address) override;
    Address GetAddress() const override;
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override;
    bool IsLinkUp() const override;
    void AddLinkChangeCallback(Callback<void> callback) override;
    bool IsBroadcast() const override;
    Address GetBroadcast() const override;
    bool IsMulticast() const override;
    Address GetMulticast(Ipv4Address multicastGroup) const override;
    Address GetMulticast(Ipv6Address addr) const override;
    bool IsBridge() const override;
    bool IsPointToPoint() const override;
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

  protected:
    void DoDispose() override;

  private:
    /**
     * Tell the owner that a frame left its queue.
     * \param entry the frame and its cookie
     * \param priority its queue
     */
    void NotifyDequeued(MetaRocePacketFifo::Entry& entry, uint8_t priority);
    /// Start sending the next frame if the transmitter is idle.
    void TryTransmit();
    /**
     * Put a frame on the wire.
     * \param frame the frame
     * \param info its record
     */
    void StartTransmission(const Ptr<Packet>& frame, MetaRoceFrameInfo& info);
    /**
     * Serialization time of the next frame, carrying the sub-resolution remainder.
     * \param bytes frame length without FCS
     * \return the time
     */
    Time NextSerializationTime(uint32_t bytes);
    /// The frame on the wire has been serialized.
    void TransmitComplete();
    /// \return the queue whose head goes next (control first), or nullptr if all are empty
    const MetaRocePacketFifo* NextQueue() const;
    /**
     * Schedule the end of serialization.
     * \param delay when, from now
     * \param next the queue of the frame expected to follow (a prefetch hint), or nullptr
     */
    void ScheduleTxComplete(uint64_t delay, const MetaRocePacketFifo* next);
    /**
     * \return true while a frame is on the wire; schedules an end of serialization that
     *         StartTransmission left without an event if it has not passed yet (a frame or a
     *         pause now needs it)
     */
    bool TransmitterBusy();
    class TxCompleteEvent; // the TransmitComplete event, with prefetches (the .cc)
    /**
     * Apply a received MAC control frame.
     * \param frame the frame
     */
    void ReceiveMacControl(Ptr<Packet> frame);
    /**
     * Count and trace a drop.
     * \param frame the frame
     * \param reason why
     * \param transmitSide true for PhyTxDrop, false for PhyRxDrop
     */
    void Drop(Ptr<const Packet> frame, MetaRoceDropReason reason, bool transmitSide);
    /**
     * Count and trace a drop of a frame with a record (its pending rewrites written first).
     * \param frame the frame
     * \param info its record
     * \param reason why
     * \param transmitSide true for PhyTxDrop, false for PhyRxDrop
     */
    void Drop(Ptr<Packet> frame,
              MetaRoceFrameInfo& info,
              MetaRoceDropReason reason,
              bool transmitSide);
    /**
     * \param priority a priority class
     * \return it clamped to the configured classes
     */
    uint8_t ClampPriority(uint8_t priority) const;
    /// Drop every queued frame and the frame on the wire (link down).
    void FlushQueues();
    /**
     * Set the pause end of one priority.
     * \param priority the class
     * \param quanta pause quanta (0 resumes)
     */
    void PausePriority(uint8_t priority, uint16_t quanta);
    /**
     * Common code of Send and SendFrom.
     * \param packet the payload
     * \param source the source MAC
     * \param dest the destination MAC
     * \param protocolNumber the EtherType
     * \return true if queued
     */
    bool SendWithEthernetHeader(Ptr<Packet> packet,
                                Mac48Address source,
                                Mac48Address dest,
                                uint16_t protocolNumber);

    // Field order: a large fabric touches each device once per many thousand events, so every
    // field read per frame costs a cache miss. The fields of the per-frame path (Receive,
    // Enqueue, TryTransmit, StartTransmission) come first: with the Object header they fill the
    // first 512 bytes (8 cache lines, which PrefetchFrameFields loads), then the 8 data queues
    // (a frame uses one); before, they were spread over 12 of the object's 19 lines. Set-up and
    // rare-path state follows.
    Ptr<MetaRoceChannel> m_channel;      //!< the channel
    MetaRocePortOwner* m_owner{nullptr}; //!< owning NIC or switch (SetPortOwner); not owned
    uint32_t m_ownerPort{0};             //!< this device's port index on m_owner
    bool m_ownerPulls{false};            //!< m_owner is a PULL owner
    DataRate m_rate;                     //!< line rate
    uint64_t m_txCarry{0};               //!< serialization remainder (bit-steps below one step)
    uint32_t m_wireOverhead{24};         //!< per-frame bytes beyond the frame (FCS+preamble+IFG)
    uint32_t m_numPriorities{8};         //!< number of priority classes
    uint16_t m_mtu{4200};                //!< MTU (frame payload after the Ethernet header)
    bool m_pfcEnabled{true};             //!< whether received PFC pauses transmission
    uint8_t m_dataPriority{3};           //!< priority of data DSCPs
    uint8_t m_controlDscp{48};           //!< the DSCP of control traffic
    uint8_t m_controlPriority{7};        //!< priority of the control DSCP
    bool m_linkUp{true};                 //!< link state
    bool m_transmitting{false};          //!< a frame is on the wire
    uint8_t m_busyQueues{0}; //!< bit p set while m_queues[p] holds frames (no scan of 8 FIFOs)
    uint8_t m_pauseSet{0};   //!< bit p set while m_pauseEnd[p] may be in the future
    Ptr<EventImpl> m_txCompleteEvent; //!< end of serialization (cancelled in place; no EventId)
    bool m_txEventPending{false};     //!< m_txCompleteEvent is scheduled for the frame on the wire
    uint64_t m_txEndAt{0};            //!< end of serialization of that frame, in time steps
    uint64_t m_txEndOrder{0};         //!< its reserved place if it has no event (ReserveOrder)
    TracedValue<uint64_t> m_queueBytesTotal{0};              //!< bytes in the data queues
    std::array<uint64_t, MAX_PRIORITIES> m_queueBytes{};     //!< bytes per data queue
    MetaRocePacketFifo m_controlQueue;                       //!< PFC frames, served first
    TracedCallback<Ptr<const Packet>> m_macTxTrace;          //!< frame accepted for transmission
    TracedCallback<Ptr<const Packet>> m_macRxTrace;          //!< frame passed up
    TracedCallback<Ptr<const Packet>> m_phyTxBeginTrace;     //!< frame starts on the wire
    TracedCallback<Ptr<const Packet>> m_snifferTrace;        //!< every frame sent or received
    AdmissionCallback m_admissionCallback;                   //!< optional admission check
    DequeueCallback m_dequeueCallback;                       //!< queue exit notification
    PullCallback m_pullCallback;                             //!< pull mode source
    Counters m_counters;                                     //!< counters
    std::array<MetaRocePacketFifo, MAX_PRIORITIES> m_queues; //!< data queues per priority

    Ptr<Node> m_node;                                    //!< the node
    uint32_t m_ifIndex{0};                               //!< interface index
    Mac48Address m_address;                              //!< MAC address
    std::array<Time, MAX_PRIORITIES> m_pauseEnd;         //!< pause expiry per priority
    std::array<EventId, MAX_PRIORITIES> m_resumeEvent;   //!< pause expiry events
    FrameReceiveCallback m_frameRxCallback;              //!< frame receive callback
    NetDevice::ReceiveCallback m_rxCallback;             //!< ns-3 receive callback
    NetDevice::PromiscReceiveCallback m_promiscCallback; //!< ns-3 promiscuous callback
    TracedCallback<> m_linkChangeCallbacks;              //!< link change listeners
    TracedCallback<Ptr<const Packet>> m_phyTxDropTrace;  //!< transmit-side drop
    TracedCallback<Ptr<const Packet>> m_phyRxDropTrace;  //!< receive-side drop
    TracedCallback<Ptr<const Packet>, MetaRoceDropReason> m_dropTrace; //!< any drop, with why
    TracedCallback<uint8_t, uint16_t> m_pfcPauseReceivedTrace; //!< per priority in a PFC frame
    TracedCallback<uint8_t, uint16_t> m_pfcPauseSentTrace;     //!< PFC frames sent
};

} // namespace ns3

#endif // METAROCE_NET_DEVICE_H
