/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The READ and atomic part of the MetaRoCE requester: the maxRdAtomic limit and Verbs order
// of requests, the answers this end queues for its peer's requests (the replay cache), and
// the placement of the answers to its own requests. Wire formats: docs/wire-format.md.

#include "metaroce-multipath-connection.h"
#include "metaroce-multipath-requester.h"

#include <algorithm>
#include <cstring>

namespace metaroce
{

void
MultipathRequester::FinishRequest(uint32_t slot)
{
    m_messages[slot].rdAtomicIssued = false;
    auto it = std::find(m_rdAtomicSlots.begin(), m_rdAtomicSlots.end(), slot);
    if (it != m_rdAtomicSlots.end())
    {
        *it = m_rdAtomicSlots.back();
        m_rdAtomicSlots.pop_back();
    }
    ReleaseRdAtomicHolds();
}

bool
MultipathRequester::OrderedBehind(const Stream& s, uint32_t slot) const
{
    // Verbs order (IB RC): a READ or atomic is executed after every earlier request of the
    // queue pair. Sprayed packets arrive in any order, so it is sent only once every earlier
    // WRITE and SEND of its stream has been acknowledged and every earlier atomic executed
    // (its request acknowledged or its answer in). Earlier READs do not hold it back: reads
    // change nothing (and, as in IB, a READ's bytes are read when its answer leaves).
    for (uint32_t k = s.head; k != slot && k != NONE; k = m_messages[k].nextInStream)
    {
        const SendMessage& e = m_messages[k];
        bool executed = e.finished || e.packetsAcked == e.numPackets;
        if (!executed && e.wr.opcode != WrOpcode::RDMA_READ)
        {
            return true;
        }
    }
    return false;
}

void
MultipathRequester::ReleaseRdAtomicHolds()
{
    if (m_rdAtomicHeldStreams == 0)
    {
        return;
    }
    // Every waiting stream tries again (in stream order; one that still has to wait is held
    // again).
    for (size_t sid = 0; sid < m_streams.size(); ++sid)
    {
        Stream& s = m_streams[sid];
        if (s.rdAtomicHold)
        {
            s.rdAtomicHold = false;
            if (!s.inSendRing)
            {
                s.inSendRing = true;
                m_sendStreams.push_back(uint16_t(sid));
            }
        }
    }
    m_rdAtomicHeldStreams = 0;
}

uint32_t
MultipathRequester::FindRequest(uint16_t streamId, uint32_t messageSeq) const
{
    for (uint32_t slot : m_rdAtomicSlots)
    {
        const SendMessage& m = m_messages[slot];
        if (m.wr.streamId == streamId && m.messageSeq == messageSeq)
        {
            return slot;
        }
    }
    return NONE;
}

bool
MultipathRequester::QueueResponse(Time now, const ParsedPacket& pkt, uint64_t original)
{
    if (!ResponseRoom())
    {
        return false;
    }
    EnsurePaths();
    // The answers form one internal stream, after the user's ones: they share the round
    // robin with data, and complete (silently) in the order the requests arrived.
    bool read = pkt.info->read;
    SendWr wr;
    wr.opcode = read                            ? WrOpcode::RDMA_READ
                : pkt.bth.opcode == MR_CMP_SWAP ? WrOpcode::ATOMIC_CMP_AND_SWP
                                                : WrOpcode::ATOMIC_FETCH_AND_ADD;
    wr.streamId = m_cfg.maxStreams;
    wr.signaled = false;
    wr.remoteAddr = read ? pkt.reth.va : pkt.atomicEth.va;
    wr.rkey = read ? pkt.reth.rkey : pkt.atomicEth.rkey;
    wr.sge.length = read ? pkt.reth.dmaLength : 0;
    uint32_t slot = EnqueueMessage(now, wr, read ? PacketsFor(wr.sge.length, m_cfg.mtu) : 1);
    SendMessage& m = m_messages[slot];
    m.response = true;
    m.answerStream = pkt.mdh.streamId;
    m.answerSeq = pkt.mdh.messageSeq;
    m.original = original;
    ++m_responsesHeld;
    return true;
}

uint8_t
MultipathRequester::PlaceResponse(Time now, const ParsedPacket& pkt, bool& duplicate)
{
    uint32_t slot = FindRequest(pkt.mdh.streamId, pkt.mdh.messageSeq);
    if (slot == NONE)
    {
        // Answers a request that is complete (an answer resent after its ACK was lost), or
        // none: acknowledge it so that the peer lets it go, and place nothing.
        duplicate = true;
        Count(Counter::RX_DUPLICATE);
        return 0;
    }
    SendMessage& m = m_messages[slot];
    const bool read = m.wr.opcode == WrOpcode::RDMA_READ;
    const uint32_t length = m.wr.sge.length;
    const uint32_t offset = pkt.mdh.offset;
    bool consistent = read ? pkt.info->read && offset % m_cfg.mtu == 0 &&
                                 (offset < length || (length == 0 && offset == 0)) &&
                                 pkt.payloadLength == std::min(m_cfg.mtu, length - offset)
                           : pkt.info->atomic && offset == 0 && pkt.payloadLength == 0;
    if (!consistent)
    {
        Count(Counter::RX_INVALID);
        return PLACE_SILENT_DROP;
    }
    const uint32_t index = offset / m_cfg.mtu;
    if (read && ((m.placed[index / 64] >> (index % 64)) & 1))
    {
        duplicate = true;
        Count(Counter::RX_DUPLICATE);
        return 0;
    }
    if (m.responsesPlaced == m.responsePackets)
    {
        duplicate = true; // (an atomic's answer, again, before the request finished)
        Count(Counter::RX_DUPLICATE);
        return 0;
    }
    // IB: the local buffer must still be registered, with local write access, when the
    // answer lands. An atomic's original value is kept in host order, as Linux rxe does.
    uint32_t len = read ? pkt.payloadLength : ATOMIC_OPERAND_SIZE;
    const void* src = read ? static_cast<const void*>(pkt.payload)
                           : static_cast<const void*>(&pkt.atomicAckEth.original);
    if (!m_ep.memory.WriteLocal(m.wr.sge.lkey, m.wr.sge.addr + offset, src, len))
    {
        Count(Counter::RX_ACCESS_ERROR);
        EnterError(now, slot, WcStatus::LOC_PROT_ERR);
        return PLACE_SILENT_DROP;
    }
    if (read)
    {
        m.placed[index / 64] |= uint64_t(1) << (index % 64);
        Count(Counter::BYTES_PLACED, len);
    }
    Count(Counter::RX_DATA);
    NoteProgress(now);
    if (++m.responsesPlaced < m.responsePackets)
    {
        return 0;
    }
    // The whole answer is here: the request arrived, whether or not its ACK did.
    if (m.packetsAcked < m.numPackets)
    {
        m.acked[0] |= 1;
        m.packetsAcked = m.numPackets;
    }
    FinishMessage(slot);
    return 0;
}

} // namespace metaroce
