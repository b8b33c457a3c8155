/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MULTIPATH_RESPONDER_H
#define METAROCE_MULTIPATH_RESPONDER_H

#include "metaroce-multipath-role.h"
#include "metaroce-path.h"
#include "metaroce-ring-queue.h"
#include "metaroce-timer-table.h"
#include "metaroce-transport.h"

#include <array>
#include <utility>
#include <vector>

namespace metaroce
{

/**
 * The responder role of a MetaRoCE connection (Linux rxe's responder): every data packet
 * is self-describing (stream, message, offset and the remote address or receive slot), so it
 * is placed in final memory on arrival; packet bitmaps per in-progress message make placement
 * exactly-once; per-path receive state (cumulative PSN + 256-bit SACK bitmap) is returned in
 * ACKs with the ECN echo and the endpoint's fair-share rate hint.
 */
class MultipathResponder : public MultipathRole
{
  public:
    /// Create the responder of \p conn (whose configuration is already validated).
    explicit MultipathResponder(MultipathConnection& conn);

    /// Post a receive work request (keys already checked by the endpoint).
    PostStatus PostRecv(const RecvWr& wr);
    /// Process a data packet.
    void HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);
    /// Process a path probe.
    void HandleProbe(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);
    /// Queue a NAK with \p syndrome for message \p seq of stream \p sid (a READ whose source
    /// was deregistered while its answer was going out).
    void QueueRequestNak(uint16_t sid, uint32_t seq, uint8_t syndrome);

    /// \return true if an ACK or NAK is due.
    bool WantsToSend() const
    {
        return m_ackNow.Any() || m_ackDue || !m_naks.empty();
    }

    /// Send the next due ACK, else the next NAK. \return false if none.
    bool PollTransmit(Time now, TxDatagram& out);
    /// \return the responder's next deadline (delayed ACKs).
    Time NextDeadline() const;
    /// Process every responder deadline due at \p now.
    void HandleTimeout(Time now);
    /// Flush every posted receive of stream \p sid (WR_FLUSH_ERR), in order.
    void FlushStream(uint16_t sid);
    /// Stop every timer and queue after the connection entered the error state.
    void ClearAfterError();

    /// \return the number of streams with responder state.
    size_t StreamCount() const
    {
        return m_streams.size();
    }

    /// \return heap bytes held by the responder (beyond its own size).
    size_t HeapBytes() const;

  private:
    /// A posted receive work request.
    struct PostedRecv
    {
        RecvWr wr;             //!< the work request (its SGE is checked per packet)
        bool done{false};      //!< message complete (or failed)
        Completion completion; //!< completion to report in order
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
        // What a packet with an RSH / ImmDt told (a WRITE's only in its last packet), kept
        // for the completion, which any packet may bring.
        bool consumesRecv{false}; //!< the message consumes a posted receive
        bool hasImm{false};       //!< the message carries immediate data
        uint32_t recvSlot{0};     //!< the receive it consumes (RSH RecvSlot)
        uint32_t immData{0};      //!< the immediate data
    };

    /// A message the responder rejected for good (later packets are rejected the same way).
    struct Rejected
    {
        uint16_t streamId;   //!< stream
        uint32_t messageSeq; //!< message
        uint8_t syndrome;    //!< NAK syndrome
    };

    /// Responder state of one stream, created on first use of the stream id.
    struct Stream
    {
        uint32_t doneBelow{0};       //!< every message before this one is complete
        uint32_t recvBase{0};        //!< receive slot of recvs.front()
        RingQueue<PostedRecv> recvs; //!< posted receives, in slot order
    };

    /// Per-path receive state.
    struct RecvPath
    {
        bool seen{false};               //!< a packet arrived on this path
        uint8_t epoch{0};               //!< current epoch
        uint32_t cumulativePsn{0};      //!< next expected PSN
        std::array<uint64_t, 4> bits{}; //!< bit i: PSN cumulativePsn+1+i arrived
        uint32_t unacked{0};            //!< packets since the last ACK
        uint32_t ceCount{0};            //!< CE marks since the last ACK
        uint32_t triggerPsn{0};         //!< PSN of the latest arrival
        uint32_t probePsn{0};           //!< PSN of the latest probe (its reply echoes it)
        uint8_t flags{0};               //!< Mah flags for the next ACK
        uint16_t srcPort{0};            //!< requester's source port (ACKs go back on it)
        Time triggerAt{0};              //!< arrival of triggerPsn ("coalesced": AckDelay)
        uint32_t repeatsLeft{0};        //!< "coalesced": ACKs that still repeat the record
        Time arrivalGap{0};             //!< time between the last two data arrivals
        uint8_t reportedFlags{0};       //!< ECE of the last record (repeats carry it)
        uint8_t reportedCe{0};          //!< CeCount of the last record (repeats carry it)
    };

    /// Create every path's receive state and timer slot, if not yet done (first packet).
    void EnsurePaths()
    {
        if (m_recvPaths.empty())
        {
            CreatePaths();
        }
    }

    void CreatePaths();
    Stream& GetStream(uint16_t id);
    uint8_t PlaceData(Time now, const ParsedPacket& pkt, bool& duplicate);
    /// Check and execute a READ or atomic request (a one-packet message), queue its answer.
    uint8_t AcceptRequest(Time now, const ParsedPacket& pkt);
    bool MessageDone(uint16_t streamId, uint32_t messageSeq) const;
    void MarkMessageDone(Stream& stream, uint16_t streamId, uint32_t messageSeq);
    void DeliverRecvCompletions(Stream& stream);
    /**
     * Complete \p recv with \p status and reject message \p seq of stream \p sid for good.
     * \return \p syndrome, the NAK its packets get
     */
    uint8_t FailRecv(Stream& stream,
                     PostedRecv& recv,
                     WcStatus status,
                     uint16_t sid,
                     uint32_t seq,
                     uint8_t syndrome);
    /// Reject message \p seq of stream \p sid for good. \return \p syndrome, the NAK its
    /// packets get
    uint8_t Reject(uint16_t sid, uint32_t seq, uint8_t syndrome);
    void QueueNak(const ParsedPacket& pkt, uint8_t syndrome);
    /// \return the receive state of path \p pathId as an ACK reports it (no flags, no CE).
    Mah ReceiveState(uint8_t pathId) const;
    /// The path's state for an ACK (rate hint left out); resets what the ACK reports.
    Mah TakeAckState(uint8_t pathId);
    bool SendAck(Time now, TxDatagram& out, uint8_t pathId);
    /// Send one coalesced ACK with the records of the paths in m_ackPending (as many as fit).
    bool SendCoalescedAck(Time now, TxDatagram& out);
    /**
     * Append to the records of a coalesced ACK (\p len bytes of at most \p cap, \p count
     * records) the repeated records of the paths in m_ackRepeat that \p fresh does not
     * report anew, as far as they fit; then restart the repeat count of the \p fresh paths.
     */
    void AppendRepeatedRecords(Time now,
                               const PathSet& fresh,
                               size_t cap,
                               size_t& len,
                               uint32_t& count);
    void ScheduleAck(Time now, uint8_t pathId, bool immediate);

    std::vector<RecvPath> m_recvPaths;                      //!< per path (empty until used)
    ResponderTimers m_timers;                               //!< delayed-ACK deadlines
    std::vector<Stream> m_streams;                          //!< streams by id (grown on use)
    std::vector<RecvMessage> m_recvMessages;                //!< messages being received
    std::vector<std::pair<uint16_t, uint32_t>> m_doneAbove; //!< complete, above doneBelow
    RingQueue<Rejected> m_rejected;                         //!< messages rejected for good
    RingQueue<Mnh> m_naks;                                  //!< NAKs to send
    PathSet m_ackNow;                                       //!< paths with an ACK due now
    // ackPolicy "coalesced": one ACK for the connection, with a record per pending path.
    const bool m_coalesced;         //!< ackPolicy "coalesced"
    bool m_ackDue{false};           //!< a coalesced ACK is due now
    bool m_messageDone{false};      //!< the packet being handled completed a message
    uint32_t m_unackedPackets{0};   //!< data packets since the last coalesced ACK
    uint32_t m_acksSent{0};         //!< coalesced ACKs sent (rotates the ACK's path)
    PathSet m_ackPending;           //!< paths with state the next coalesced ACK reports
    PathSet m_ackRepeat;            //!< paths whose last record the next ACKs repeat
    std::vector<uint8_t> m_records; //!< scratch: the records of one coalesced ACK
};

} // namespace metaroce

#endif // METAROCE_MULTIPATH_RESPONDER_H
