/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MULTIPATH_CONNECTION_H
#define METAROCE_MULTIPATH_CONNECTION_H

#include "metaroce-congestion-control.h"
#include "metaroce-loss-detection.h"
#include "metaroce-path-scheduler.h"
#include "metaroce-ring-queue.h"
#include "metaroce-transport.h"

#include <array>
#include <memory>
#include <vector>

namespace metaroce
{

/**
 * A MetaRoCE connection (our model of the published design): many ordered streams above,
 * many paths below, one congestion controller.
 *
 * Requester role: work requests are cut into MTU packets that are sprayed over paths with
 * open windows; each path has its own PSN space, window, RTT estimate and UDP source port.
 * A gap in a path's SACK bitmap is loss and exactly the missing PSN is resent on that path;
 * a per-path RTO moves the path's outstanding packets to the other paths and resets its
 * PSN space (a new epoch); failureThreshold RTOs in a row without an ACK fail the path,
 * which is then probed on a new source port until it answers. A message completes when
 * every packet is acknowledged; completions are reported in post order per stream.
 *
 * Responder role: every data packet is self-describing (stream, message, offset and the
 * remote address or receive slot), so it is placed in final memory on arrival; packet
 * bitmaps per in-progress message make placement exactly-once; per-path receive state
 * (cumulative PSN + 256-bit SACK bitmap) is returned in ACKs with the ECN echo and the
 * endpoint's fair-share rate hint.
 */
class MultipathConnection : public TransportConnection
{
  public:
    /// Create connection \p qpn of \p ep (cfg must have been validated).
    MultipathConnection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg);

    Transport Kind() const override
    {
        return Transport::METAROCE;
    }

    PostStatus PostSend(Time now, const SendWr& wr, const uint8_t* localPtr) override;
    PostStatus PostRecv(Time now, const RecvWr& wr, uint8_t* localPtr) override;
    void HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt) override;
    bool PollTransmit(Time now, TxDatagram& out) override;
    bool WantsToSend(Time now) const override;
    Time NextDeadline() const override;
    void HandleTimeout(Time now) override;
    size_t PathCount() const override;
    const PathState* Path(size_t i) const override;
    size_t StateBytes() const override;

    /// \return the current pacing rate in b/s (0 = unpaced).
    double PacingRate() const
    {
        return m_pacingRate;
    }

  private:
    static constexpr uint32_t NONE = 0xFFFFFFFF; //!< "no message slot"

    /// Requester state of one send work request.
    struct SendMessage
    {
        SendWr wr;                         //!< the work request (its SGE is checked per packet)
        uint32_t messageSeq{0};            //!< per-stream sequence number
        uint32_t recvSlot{0};              //!< receive slot (receive-consuming opcodes)
        uint32_t numPackets{0};            //!< packets in the message
        uint32_t nextPacket{0};            //!< next packet never sent
        uint32_t packetsAcked{0};          //!< packets acknowledged
        std::vector<uint64_t> acked;       //!< acknowledged-packet bitmap
        uint32_t generation{0};            //!< bumped when the slot is reused
        uint32_t nextInStream{NONE};       //!< next message of the same stream
        uint32_t rnrRetries{0};            //!< RNR NAKs received
        WcStatus status{WcStatus::SUCCESS}; //!< outcome
        bool finished{false};              //!< acknowledged or failed
        bool inUse{false};                 //!< slot holds a message
    };

    /// A packet that must be resent on any path (with a new PSN).
    struct Resend
    {
        uint32_t slot;        //!< message slot
        uint32_t generation;  //!< slot generation
        uint32_t packetIndex; //!< packet within the message
        uint8_t retries;      //!< retransmissions so far
        bool rnr;             //!< resent after an RNR wait: not a retry
    };

    /// A posted receive work request.
    struct PostedRecv
    {
        RecvWr wr;                 //!< the work request (its SGE is checked per packet)
        bool done{false};          //!< message complete (or failed)
        Completion completion;     //!< completion to report in order
    };

    /// Responder state of a message being received.
    struct RecvMessage
    {
        bool inUse{false};          //!< slot holds a message
        uint16_t streamId{0};       //!< stream
        uint32_t messageSeq{0};     //!< message
        uint32_t length{0};         //!< total bytes
        uint32_t numPackets{0};     //!< packets expected
        uint32_t received{0};       //!< packets placed
        std::vector<uint64_t> bits; //!< placed-packet bitmap
    };

    /// A message the responder rejected for good (later packets are rejected the same way).
    struct Rejected
    {
        uint16_t streamId;   //!< stream
        uint32_t messageSeq; //!< message
        uint8_t syndrome;    //!< NAK syndrome
    };

    /// Per-stream state, created on first use of the stream id.
    struct Stream
    {
        // requester
        uint32_t head{NONE};       //!< oldest outstanding message
        uint32_t tail{NONE};       //!< newest outstanding message
        uint32_t sendCursor{NONE}; //!< first message with unsent packets
        uint32_t nextMessageSeq{0}; //!< sequence number of the next posted message
        uint32_t nextRecvSlot{0};  //!< receive slot of the next receive-consuming message
        bool inSendRing{false};    //!< in m_sendStreams
        // requester: RNR wait. The responder had no receive for slot rnrSlot: messages that
        // consume slot rnrSlot or later wait, and one packet at a time asks again.
        bool rnrHold{false};        //!< in an RNR wait
        bool rnrProbeOut{false};    //!< the asking packet is out
        uint32_t rnrSlot{0};        //!< first receive slot the responder lacked
        uint32_t rnrProbeSeq{0};    //!< message of the asking packet
        uint32_t rnrProbePacket{0}; //!< its packet index
        Time rnrProbeAt{0};         //!< when the next packet may ask
        // responder
        uint32_t doneBelow{0};     //!< every message before this one is complete
        uint32_t recvBase{0};      //!< receive slot of recvs.front()
        RingQueue<PostedRecv> recvs; //!< posted receives, in slot order
    };

    /// Per-path responder state.
    struct RecvPath
    {
        bool seen{false};                //!< a packet arrived on this path
        uint8_t epoch{0};                //!< current epoch
        uint32_t cumulativePsn{0};       //!< next expected PSN
        std::array<uint64_t, 4> bits{};  //!< bit i: PSN cumulativePsn+1+i arrived
        uint32_t unacked{0};             //!< packets since the last ACK
        uint32_t ceCount{0};             //!< CE marks since the last ACK
        uint32_t triggerPsn{0};          //!< PSN of the latest arrival
        uint8_t flags{0};                //!< Mah flags for the next ACK
        uint16_t srcPort{0};             //!< requester's source port (ACKs go back on it)
        Time ackDeadline{TIME_INFINITE}; //!< delayed ACK deadline
    };

    // Requester
    PostStatus CheckSendable(const SendWr& wr) const;
    bool SendData(Time now, TxDatagram& out);
    bool SendProbe(Time now, TxDatagram& out, PathState& path);
    bool TransmitPacket(Time now,
                        TxDatagram& out,
                        PathState& path,
                        uint32_t psn,
                        uint32_t slot,
                        uint32_t packetIndex,
                        bool retransmission,
                        uint32_t retries);
    bool NextNewPacket(uint32_t& slot, uint32_t& packetIndex);
    bool PacketWanted(uint32_t slot, uint32_t generation, uint32_t packetIndex) const;
    void HandleAck(Time now, const Mah& ack);
    void HandleNak(Time now, const Mnh& nak);
    void AckEntry(PathState& path, uint32_t psn, Time now, uint32_t triggerPsn,
                  uint32_t& newlyAcked, Time& rttSample);
    void CreditPacket(uint32_t slot, uint32_t generation, uint32_t packetIndex);
    void CompleteStreamHead(uint16_t streamId);
    void UpdateRtt(PathState& path, Time sample);
    void HandleRetiredAck(Time now, PathState& path, const Mah& ack);
    void RetireEpoch(PathState& path);
    bool RnrHeld(uint32_t slot) const;
    void ReleaseRnr(uint16_t streamId);
    void AskAfterRnr(Time now);
    Time ProbeInterval();
    void ArmRto(PathState& path, Time now);
    void OnRto(Time now, PathState& path);
    void ResetPathSequence(PathState& path);
    void FailPath(Time now, PathState& path);
    uint16_t FreshSourcePort();
    void EnterError(Time now, uint32_t failedSlot, WcStatus status);
    uint32_t AllocateSlot();
    bool HasNewData() const;
    bool HasResendReady() const;
    uint32_t TotalInflight() const;
    bool ConnectionWindowOpen() const;
    int PathWithPendingLoss() const;
    Stream& GetStream(uint16_t id);

    // Responder
    void HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);
    void HandleProbe(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);
    uint8_t PlaceData(Time now, const ParsedPacket& pkt, bool& duplicate);
    bool MessageDone(uint16_t streamId, uint32_t messageSeq) const;
    void MarkMessageDone(Stream& stream, uint16_t streamId, uint32_t messageSeq);
    void DeliverRecvCompletions(Stream& stream);
    void QueueNak(const ParsedPacket& pkt, uint8_t syndrome);
    bool SendAck(Time now, TxDatagram& out, uint8_t pathId);
    void ScheduleAck(Time now, uint8_t pathId, bool immediate);

    std::unique_ptr<CongestionControl> m_cc;    //!< window strategy
    std::unique_ptr<PathScheduler> m_scheduler; //!< path choice
    std::unique_ptr<LossDetection> m_loss;      //!< loss detection
    std::vector<PathState> m_paths;             //!< requester paths
    std::vector<RecvPath> m_recvPaths;          //!< responder paths
    std::vector<Stream> m_streams;              //!< streams by id (grown on use)
    std::vector<SendMessage> m_messages;        //!< message slots (grown on use)
    std::vector<uint32_t> m_freeSlots;          //!< free message slots
    uint32_t m_outstanding{0};                  //!< messages posted, not completed
    RingQueue<uint16_t> m_sendStreams;          //!< streams with unsent packets (round robin)
    RingQueue<Resend> m_resends;                //!< packets to resend on any path
    std::vector<Resend> m_rnrParked;            //!< packets waiting out an RNR wait
    uint32_t m_rnrHeldStreams{0};               //!< streams in an RNR wait
    std::vector<RecvMessage> m_recvMessages;    //!< messages being received
    std::vector<std::pair<uint16_t, uint32_t>> m_doneAbove; //!< complete, above doneBelow
    RingQueue<Rejected> m_rejected;             //!< messages rejected for good
    RingQueue<Mnh> m_naks;                      //!< NAKs to send
    uint64_t m_ackNow{0};                       //!< paths with an ACK due now
    uint64_t m_probeNow{0};                     //!< paths with a probe due now
    std::vector<uint32_t> m_lostScratch;        //!< reused by loss detection
    double m_pacingRate{0};                     //!< current pacing rate, b/s (0: none)
    Time m_nextSendTime{0};                     //!< pacing: earliest next data packet
    Time m_progressTime{0}; //!< last acknowledged data or RNR NAK, or start of the work
    Time m_now{0};                              //!< latest time the host passed in
};

} // namespace metaroce

#endif // METAROCE_MULTIPATH_CONNECTION_H
