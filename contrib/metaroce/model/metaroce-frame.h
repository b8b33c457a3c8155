/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_FRAME_H
#define METAROCE_FRAME_H

#include "metaroce-encap.h"

#include "ns3/header.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"
#include "ns3/trailer.h"

#include <cstdint>

/**
 * \file
 * Glue between ns3::Packet and the engine's byte-level frame helpers (metaroce-encap.h):
 * peeking at a frame's headers without copying its payload, and writing rewritten header bytes
 * back into a packet.
 */

namespace ns3
{

/**
 * Bytes copied out of a packet to parse its headers: Ethernet (14) plus an IPv4 header with the
 * largest options (60) plus UDP (8) is 82; rounded up.
 */
constexpr uint32_t METAROCE_HEADER_PEEK_SIZE = 96;

/// Drop reasons shared by devices, channels and switches.
enum class MetaRoceDropReason : uint8_t
{
    LINK_DOWN,       //!< the link (or the egress port) is down
    MTU_EXCEEDED,    //!< the frame is longer than the device MTU plus the Ethernet header
    ADMISSION,       //!< the device owner's admission callback refused the frame
    CHANNEL_LOSS,    //!< the link's error model dropped the frame
    MALFORMED,       //!< the frame failed to parse (bad Ethernet, IPv4 or UDP header)
    NO_ROUTE,        //!< the switch has no route to the destination address
    TTL_EXPIRED,     //!< the IPv4 TTL reached zero
    BUFFER_FULL,     //!< the switch's shared buffer has no room for the frame
    QUEUE_THRESHOLD, //!< the egress queue is over its dynamic threshold
    UNCLAIMED,       //!< a device received a frame and no receive callback is set
    COUNT,           //!< number of reasons (not a reason)
};

/// Number of drop reasons.
constexpr uint32_t METAROCE_DROP_REASON_COUNT = static_cast<uint32_t>(MetaRoceDropReason::COUNT);

/// \return the enum value name of \p reason, e.g. "BUFFER_FULL".
const char* MetaRoceDropReasonName(MetaRoceDropReason reason);

/**
 * Copy the first bytes of \p frame into \p buffer and parse them with metaroce::ParseFrame.
 *
 * Only the headers are copied: ParseFrame reads at most 82 bytes (Ethernet, IPv4 with options,
 * UDP) but checks the lengths against the whole frame, so it is given the packet's real size.
 * On OK, \p out.meta, \p out.src, \p out.dst, \p out.ipHeader (pointing into \p buffer) and
 * \p out.ipHeaderLen are valid; \p out.datagram is not (it may point past \p buffer).
 *
 * \param frame an Ethernet frame
 * \param buffer receives min(size, METAROCE_HEADER_PEEK_SIZE) leading bytes of the frame
 * \param out the parsed headers
 * \return metaroce::FrameStatus::OK or why the frame is not a valid IPv4/UDP frame
 */
metaroce::FrameStatus MetaRocePeekFrame(Ptr<const Packet> frame,
                                        uint8_t (&buffer)[METAROCE_HEADER_PEEK_SIZE],
                                        metaroce::ParsedFrame& out);

/**
 * \ingroup metaroce
 * What the fabric needs of a frame, carried beside its ns3::Packet along the model's own path
 * (NIC pull, device queue, channel, device, switch, ...) so that a switch hop reads no header
 * bytes: the fields forwarding reads, and the header rewrites of the hops so far (TTL, CE,
 * Ethernet addresses) that are not yet in the packet's bytes. Anything that hands the packet
 * to code outside that path (a trace, a callback, an error model, another MPI rank, a drop)
 * first writes them (MetaRoceWritePending), so every reader sees the bytes it saw before.
 * A record that is not valid (a frame from another source) makes the switch parse the bytes.
 */
struct MetaRoceFrameInfo
{
    metaroce::DatagramMeta meta; //!< addresses, UDP ports, DSCP and ECN (as rewritten so far)
    uint8_t ttl{0};              //!< the IPv4 TTL (as rewritten so far)
    uint8_t ipHeaderLen{0};      //!< IPv4 header bytes (IHL * 4)
    uint8_t pendingHops{0};      //!< TTL decrements not yet in the bytes
    uint8_t ceAtHop{0};          //!< the pending hop (1-based) that marked CE; 0 = none
    bool pendingMacs{false};     //!< src and dst are not yet in the bytes
    bool valid{false};           //!< the fields above describe the frame
    uint8_t src[6]{};            //!< Ethernet source to write
    uint8_t dst[6]{};            //!< Ethernet destination to write

    /// \return true if some rewrite is not yet in the bytes
    bool HasPending() const
    {
        return pendingHops != 0 || pendingMacs;
    }
};

/**
 * Apply the rewrites \p info holds to the leading bytes of its frame: per pending hop, in hop
 * order, the TTL decrement with its checksum update (RFC 1624) and the CE mark of that hop,
 * then the Ethernet addresses (the same operations a switch hop applied to the bytes).
 * \param bytes the frame's first ETHERNET_HEADER_SIZE + info.ipHeaderLen bytes
 * \param info the record (not changed)
 */
void MetaRoceApplyPending(uint8_t* bytes, const MetaRoceFrameInfo& info);

/**
 * Write the pending rewrites of \p info into \p frame (no-op when there are none) and clear
 * them.
 * \param frame the frame
 * \param info its record
 */
void MetaRoceWritePending(Packet& frame, MetaRoceFrameInfo& info);

/**
 * Decrement the TTL of a valid IPv4 header and update its checksum (RFC 1624 eqn. 3).
 * \param ip the IPv4 header
 */
void MetaRoceDecrementIpv4Ttl(uint8_t* ip);

/**
 * \ingroup metaroce
 * Raw header bytes, used to write rewritten leading bytes of a frame back into a packet
 * (Packet::RemoveAtStart, then AddHeader) and to prepend an Ethernet header in
 * MetaRoceNetDevice::Send. Holds at most METAROCE_HEADER_PEEK_SIZE bytes inline (no heap).
 */
class MetaRoceRawHeader : public Header
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    /// Create an empty header.
    MetaRoceRawHeader();

    /**
     * Create a header holding a copy of \p size bytes.
     * \param bytes the bytes
     * \param size their number, at most METAROCE_HEADER_PEEK_SIZE
     */
    MetaRoceRawHeader(const uint8_t* bytes, uint32_t size);

    /// \return the held bytes.
    const uint8_t* GetBytes() const;

    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;
    uint32_t Deserialize(Buffer::Iterator start, Buffer::Iterator end) override;
    void Print(std::ostream& os) const override;

  private:
    uint8_t m_bytes[METAROCE_HEADER_PEEK_SIZE]; //!< the bytes
    uint32_t m_size;                            //!< number of valid bytes
};

/**
 * \ingroup metaroce
 * Build the ns3::Packet of a frame held in \p bytes. When the \p zeroLength bytes at
 * \p zeroOffset are all zero (the payload of a virtual memory region is), the packet is built
 * from the bytes before them (a header), a virtual zero area of \p zeroLength bytes
 * (Packet(size): no buffer, no copy) and the bytes after them (a trailer); its bytes are the
 * same as those of Packet(bytes, size). Otherwise (real payload bytes) it is Packet(bytes, size).
 *
 * \param bytes the frame
 * \param size its length
 * \param zeroOffset where the payload starts
 * \param zeroLength payload length (0: no payload; the frame is copied)
 * \param knownZero the caller knows the payload is zeros (its bytes are not read: they need
 *        not have been written)
 * \return the packet
 */
Ptr<Packet> MetaRoceCreateFrame(const uint8_t* bytes,
                                uint32_t size,
                                uint32_t zeroOffset,
                                uint32_t zeroLength,
                                bool knownZero = false);

/**
 * \ingroup metaroce
 * Leading bytes of a frame given by pointer, serialized at once by Packet::AddHeader (the
 * pointer must stay valid until then). Used by MetaRoceCreateFrame; cannot be deserialized.
 */
class MetaRoceSpanHeader : public Header
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    /// Create an empty header.
    MetaRoceSpanHeader();

    /**
     * \param bytes the bytes (not copied)
     * \param size their number
     */
    MetaRoceSpanHeader(const uint8_t* bytes, uint32_t size);

    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;
    void Print(std::ostream& os) const override;

  private:
    const uint8_t* m_bytes; //!< the bytes
    uint32_t m_size;        //!< their number
};

/**
 * \ingroup metaroce
 * Trailing bytes of a frame given by pointer (see MetaRoceSpanHeader).
 */
class MetaRoceSpanTrailer : public Trailer
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    /// Create an empty trailer.
    MetaRoceSpanTrailer();

    /**
     * \param bytes the bytes (not copied)
     * \param size their number
     */
    MetaRoceSpanTrailer(const uint8_t* bytes, uint32_t size);

    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator end) const override;
    uint32_t Deserialize(Buffer::Iterator end) override;
    void Print(std::ostream& os) const override;

  private:
    const uint8_t* m_bytes; //!< the bytes
    uint32_t m_size;        //!< their number
};

} // namespace ns3

#endif // METAROCE_FRAME_H
