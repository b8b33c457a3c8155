/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_WIRE_H
#define METAROCE_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>

/**
 * \file
 * Wire headers of the transport datagram (the bytes after the UDP header), as layout tables.
 *
 * A datagram is: BTH, the extension headers the opcode table lists for its opcode, the
 * payload padded to a multiple of 4 bytes (BTH PadCnt), and a 4-byte ICRC. Every header is
 * a plain struct with Read() and Write() that go through named offsets and the big-endian
 * helpers; nothing is read by casting bytes to a struct. The layouts are drawn in
 * docs/wire-format.md. The MetaRoCE extension headers (MDH, RSH, MAH, MNH) are our model of
 * the published design: MetaRoCE's own wire format is not public.
 */

namespace metaroce
{

/// Size of the invariant CRC trailer of every datagram.
constexpr size_t ICRC_SIZE = 4;

/// PSNs are 24-bit as in InfiniBand.
constexpr uint32_t PSN_MASK = 0xFFFFFF;

/// \return (a - b) modulo 2^24 interpreted as a signed 24-bit distance.
inline int32_t
PsnDiff(uint32_t a, uint32_t b)
{
    uint32_t d = (a - b) & PSN_MASK;
    return (d & 0x800000) ? int32_t(d) - 0x1000000 : int32_t(d);
}

/// \return (psn + n) modulo 2^24.
inline uint32_t
PsnAdd(uint32_t psn, uint32_t n)
{
    return (psn + n) & PSN_MASK;
}

/**
 * InfiniBand Base Transport Header (12 bytes).
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------+-+-+---+-------+-------------------------------+
 |    OpCode     |S|M|Pad| TVer  |            P_Key              |
 +-+-+-----------+-+-+---+-------+-------------------------------+
 |F|B|   Resv6   |                 Destination QP                |
 +-+-------------+-----------------------------------------------+
 |A|    Resv7    |                      PSN                      |
 +-+-------------+-----------------------------------------------+
 \endverbatim
 */
struct Bth
{
    static constexpr size_t SIZE = 12;               //!< header length
    static constexpr size_t OPCODE = 0;              //!< offset of OpCode
    static constexpr size_t FLAGS = 1;               //!< offset of SE/M/PadCnt/TVer
    static constexpr size_t PKEY = 2;                //!< offset of P_Key
    static constexpr size_t ECN_FLAGS = 4;           //!< offset of FECN/BECN/Resv6
    static constexpr size_t DEST_QP = 5;             //!< offset of the 24-bit Destination QP
    static constexpr size_t ACK_REQ = 8;             //!< offset of AckReq/Resv7
    static constexpr size_t PSN = 9;                 //!< offset of the 24-bit PSN
    static constexpr uint16_t DEFAULT_PKEY = 0xFFFF; //!< default partition key

    uint8_t opcode{0};           //!< operation code (see the opcode table)
    bool solicited{false};       //!< solicited event
    bool migReq{false};          //!< migration state
    uint8_t padCount{0};         //!< pad bytes after the payload (0-3)
    uint8_t tver{0};             //!< transport header version (0)
    uint16_t pkey{DEFAULT_PKEY}; //!< partition key
    bool fecn{false};            //!< forward ECN (IB link layer; unused on RoCEv2)
    bool becn{false};            //!< backward ECN (IB link layer; unused on RoCEv2)
    uint32_t destQp{0};          //!< 24-bit destination queue pair / connection id
    bool ackReq{false};          //!< acknowledge request
    uint32_t psn{0};             //!< 24-bit packet sequence number

    /// \return the header parsed from \p p (at least SIZE bytes).
    static Bth Read(const uint8_t* p);
    /// Write the header to \p p (at least SIZE bytes).
    void Write(uint8_t* p) const;
};

/**
 * InfiniBand RDMA Extended Transport Header (16 bytes).
 *
 * MetaRoCE WRITE packets carry a RETH in every packet (the destination of this packet's
 * payload), as OCP MRC does; RoCEv2 carries it only on the first packet of a WRITE.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------------------------------------------------------+
 |                     Virtual Address (63..32)                  |
 +---------------------------------------------------------------+
 |                     Virtual Address (31..0)                   |
 +---------------------------------------------------------------+
 |                          R_Key                                |
 +---------------------------------------------------------------+
 |                        DMA Length                             |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct Reth
{
    static constexpr size_t SIZE = 16;       //!< header length
    static constexpr size_t VA = 0;          //!< offset of the virtual address
    static constexpr size_t RKEY = 8;        //!< offset of R_Key
    static constexpr size_t DMA_LENGTH = 12; //!< offset of DMA Length

    uint64_t va{0};        //!< remote virtual address
    uint32_t rkey{0};      //!< remote key
    uint32_t dmaLength{0}; //!< length of the whole message in bytes

    /// \return the header parsed from \p p.
    static Reth Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * InfiniBand ACK Extended Transport Header (4 bytes), used by the RoCEv2 engine.
 *
 * \verbatim
 +---------------+-----------------------------------------------+
 |   Syndrome    |                  MSN (24)                     |
 +---------------+-----------------------------------------------+
 \endverbatim
 */
struct Aeth
{
    static constexpr size_t SIZE = 4;     //!< header length
    static constexpr size_t SYNDROME = 0; //!< offset of the syndrome
    static constexpr size_t MSN = 1;      //!< offset of the 24-bit MSN

    // Syndrome (InfiniBand spec, AETH syndrome encoding): bit 7 reserved, bits 6-5 the type,
    // bits 4-0 its value.
    static constexpr uint8_t TYPE_MASK = 0x60;            //!< syndrome bits holding the type
    static constexpr uint8_t VALUE_MASK = 0x1F;           //!< syndrome bits holding the value
    static constexpr uint8_t TYPE_ACK = 0x00;             //!< ACK; value = credit count
    static constexpr uint8_t TYPE_RNR_NAK = 0x20;         //!< RNR NAK; value = encoded RNR timer
    static constexpr uint8_t TYPE_NAK = 0x60;             //!< NAK; value = one of the NAK_* codes
    static constexpr uint8_t CREDITS_INVALID = 0x1F;      //!< ACK value: no end-to-end credits
    static constexpr uint8_t NAK_PSN_SEQUENCE_ERROR = 0;  //!< NAK code: PSN sequence error
    static constexpr uint8_t NAK_INVALID_REQUEST = 1;     //!< NAK code: invalid request
    static constexpr uint8_t NAK_REMOTE_ACCESS_ERROR = 2; //!< NAK code: remote access error
    static constexpr uint8_t NAK_REMOTE_OPERATIONAL_ERROR = 3; //!< NAK code: remote op error

    uint8_t syndrome{0}; //!< ACK/NAK syndrome
    uint32_t msn{0};     //!< message sequence number

    /// \return the header parsed from \p p.
    static Aeth Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * InfiniBand Atomic Extended Transport Header (28 bytes), in Compare&Swap and Fetch&Add
 * requests.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------------------------------------------------------+
 |                  Virtual Address (63..0)                      |
 +                                                               +
 |                                                               |
 +---------------------------------------------------------------+
 |                          R_Key                                |
 +---------------------------------------------------------------+
 |          Swap (Compare&Swap) or Add (Fetch&Add) Data          |
 +                          (63..0)                              +
 |                                                               |
 +---------------------------------------------------------------+
 |             Compare Data (63..0; Compare&Swap only)           |
 +                                                               +
 |                                                               |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct AtomicEth
{
    static constexpr size_t SIZE = 28;     //!< header length
    static constexpr size_t VA = 0;        //!< offset of the virtual address
    static constexpr size_t RKEY = 8;      //!< offset of R_Key
    static constexpr size_t SWAP_ADD = 12; //!< offset of Swap/Add Data
    static constexpr size_t COMPARE = 20;  //!< offset of Compare Data

    uint64_t va{0};      //!< remote virtual address (8-byte aligned)
    uint32_t rkey{0};    //!< remote key
    uint64_t swapAdd{0}; //!< Compare&Swap: value stored; Fetch&Add: value added
    uint64_t compare{0}; //!< Compare&Swap: value compared (Fetch&Add: 0)

    /// \return the header parsed from \p p.
    static AtomicEth Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * InfiniBand Atomic Acknowledge Extended Transport Header (8 bytes), after the AETH of an
 * Atomic Acknowledge: the remote value before the operation.
 *
 * \verbatim
 +---------------------------------------------------------------+
 |               Original Remote Data (63..32)                   |
 +---------------------------------------------------------------+
 |               Original Remote Data (31..0)                    |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct AtomicAckEth
{
    static constexpr size_t SIZE = 8;     //!< header length
    static constexpr size_t ORIGINAL = 0; //!< offset of Original Remote Data

    uint64_t original{0}; //!< the 64-bit value the atomic operation found

    /// \return the header parsed from \p p.
    static AtomicAckEth Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/// InfiniBand Immediate Data header (4 bytes, opaque to the transport).
struct ImmDt
{
    static constexpr size_t SIZE = 4; //!< header length
};

/**
 * MetaRoCE Data Header (12 bytes), in every data and probe packet: which path and path
 * epoch the PSN belongs to, and which stream, message and offset the payload is for.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------+---------------+-------------------------------+
 |    PathId     |   PathEpoch   |           StreamId            |
 +---------------+---------------+-------------------------------+
 |                  MessageSeq (per stream)                      |
 +---------------------------------------------------------------+
 |               Offset of the payload in the message            |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct Mdh
{
    static constexpr size_t SIZE = 12;       //!< header length
    static constexpr size_t PATH_ID = 0;     //!< offset of PathId
    static constexpr size_t PATH_EPOCH = 1;  //!< offset of PathEpoch
    static constexpr size_t STREAM_ID = 2;   //!< offset of StreamId
    static constexpr size_t MESSAGE_SEQ = 4; //!< offset of MessageSeq
    static constexpr size_t OFFSET = 8;      //!< offset of Offset

    uint8_t pathId{0};      //!< path the PSN belongs to
    uint8_t pathEpoch{0};   //!< generation of the path's PSN space
    uint16_t streamId{0};   //!< ordered stream within the connection
    uint32_t messageSeq{0}; //!< message sequence number within the stream
    uint32_t offset{0};     //!< byte offset of this payload within the message

    /// \return the header parsed from \p p.
    static Mdh Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * MetaRoCE Receive Slot Header (8 bytes), in SEND and WRITE-with-immediate packets: the
 * match to a posted receive, so a packet can be placed before earlier messages arrive.
 *
 * \verbatim
 +---------------------------------------------------------------+
 |        RecvSlot (index among the stream's receive WRs)        |
 +---------------------------------------------------------------+
 |                    MessageLength (bytes)                      |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct Rsh
{
    static constexpr size_t SIZE = 8;           //!< header length
    static constexpr size_t RECV_SLOT = 0;      //!< offset of RecvSlot
    static constexpr size_t MESSAGE_LENGTH = 4; //!< offset of MessageLength

    uint32_t recvSlot{0};      //!< which posted receive of the stream this message consumes
    uint32_t messageLength{0}; //!< total message length in bytes

    /// \return the header parsed from \p p.
    static Rsh Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/// Number of PSNs covered by the SACK bitmap of an ACK.
constexpr uint32_t SACK_BITS = 256;
static_assert(SACK_BITS % 64 == 0, "the bitmap is kept in 64-bit words");

/**
 * MetaRoCE ACK Header (48 bytes): one path's receive state and the receiver's rate hint.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------+---------------+---------------+---------------+
 |    PathId     |   PathEpoch   |     Flags     |   CeCount     |
 +---------------+---------------+---------------+---------------+
 |   Reserved    |         CumulativePsn (next expected PSN)     |
 +---------------+-----------------------------------------------+
 |   Reserved    |      TriggerPsn (PSN that caused this ACK)    |
 +---------------+-----------------------------------------------+
 |            RateHint (Mb/s; 0xFFFFFFFF = no limit)             |
 +---------------------------------------------------------------+
 |                                                               |
 +    SACK bitmap, 256 bits: bit i = PSN CumulativePsn+1+i      +
 |    (byte i/8, bit 7-i%8, i.e. MSB first)       32 bytes       |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct Mah
{
    static constexpr size_t SIZE = 48;                   //!< header length
    static constexpr size_t PATH_ID = 0;                 //!< offset of PathId
    static constexpr size_t PATH_EPOCH = 1;              //!< offset of PathEpoch
    static constexpr size_t FLAGS = 2;                   //!< offset of Flags
    static constexpr size_t CE_COUNT = 3;                //!< offset of CeCount
    static constexpr size_t CUMULATIVE_PSN = 5;          //!< offset of the 24-bit CumulativePsn
    static constexpr size_t TRIGGER_PSN = 9;             //!< offset of the 24-bit TriggerPsn
    static constexpr size_t RATE_HINT = 12;              //!< offset of RateHint
    static constexpr size_t SACK = 16;                   //!< offset of the SACK bitmap
    static constexpr size_t SACK_BYTES = SACK_BITS / 8;  //!< bitmap length
    static constexpr uint32_t NO_RATE_HINT = 0xFFFFFFFF; //!< RateHint: no limit

    static constexpr uint8_t FLAG_ECE = 0x01;         //!< a CE-marked packet arrived
    static constexpr uint8_t FLAG_PROBE_REPLY = 0x02; //!< answers a path probe
    static constexpr uint8_t FLAG_DUPLICATE = 0x04;   //!< triggered by a duplicate packet
    /// (coalesced ACK records only) the path's state as already reported, repeated in case
    /// that ACK was lost; carries no CE count, ECE or duplicate report of its own
    static constexpr uint8_t FLAG_REPEAT = 0x10;

    uint8_t pathId{0};               //!< path acknowledged
    uint8_t pathEpoch{0};            //!< epoch of that path's PSN space
    uint8_t flags{0};                //!< FLAG_* bits
    uint8_t ceCount{0};              //!< CE-marked packets since the previous ACK (saturating)
    uint32_t cumulativePsn{0};       //!< every PSN before this one has arrived
    uint32_t triggerPsn{0};          //!< the PSN whose arrival caused this ACK
    uint32_t rateHint{NO_RATE_HINT}; //!< receiver's fair share for this sender, Mb/s
    std::array<uint64_t, 4> sack{};  //!< bit i of word i/64 (LSB first) = PSN cum+1+i

    /// \return true if PSN cumulativePsn + 1 + \p i is marked received.
    bool SackBit(uint32_t i) const
    {
        return (sack[i >> 6] >> (i & 63)) & 1;
    }

    /// Mark PSN cumulativePsn + 1 + \p i as received.
    void SetSackBit(uint32_t i)
    {
        sack[i >> 6] |= uint64_t(1) << (i & 63);
    }

    /// \return the header parsed from \p p.
    static Mah Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * MetaRoCE Coalesced ACK Header (8 bytes), on MR_ACK_COALESCED. One coalesced ACK carries
 * the receive state of every path that received packets since the previous ACK, as a list of
 * AckRecords in the payload, and the rate hint once. [M] our model: the public description
 * says ACKs carry per-path state and a rate hint, not how many paths one ACK covers.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------------------------------------------------------+
 |            RateHint (Mb/s; 0xFFFFFFFF = no limit)             |
 +---------------+-----------------------------------------------+
 |  RecordCount  |                    Reserved                   |
 +---------------+-----------------------------------------------+
 \endverbatim
 */
struct Mch
{
    static constexpr size_t SIZE = 8;         //!< header length
    static constexpr size_t RATE_HINT = 0;    //!< offset of RateHint
    static constexpr size_t RECORD_COUNT = 4; //!< offset of RecordCount

    uint32_t rateHint{0xFFFFFFFF}; //!< receiver's fair share for this sender, Mb/s
    uint8_t recordCount{0};        //!< AckRecords in the payload

    /// \return the header parsed from \p p.
    static Mch Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * One path's entry in the payload of a coalesced ACK (16 bytes, plus the 32-byte SACK bitmap
 * of an MAH when FLAG_SACK is set): the first 12 bytes of an MAH, then how long the responder
 * held the newest arrival before acknowledging it (AckDelay, in units of 8 ns, saturating),
 * which the requester takes out of its RTT sample as QUIC does (RFC 9002, 5.3).
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------+---------------+---------------+---------------+
 |    PathId     |   PathEpoch   |     Flags     |   CeCount     |
 +---------------+---------------+---------------+---------------+
 |   Reserved    |         CumulativePsn (next expected PSN)     |
 +---------------+-----------------------------------------------+
 |   Reserved    |      TriggerPsn (newest PSN on the path)      |
 +---------------+---------------+-------------------------------+
 |        AckDelay (8 ns)        |            Reserved           |
 +-------------------------------+-------------------------------+
 |     SACK bitmap as in the MAH (32 bytes), if Flags & 0x08     |
 +---------------------------------------------------------------+
 \endverbatim
 * Flags 0x10 (Mah::FLAG_REPEAT): a repeated record, the path's state as an earlier ACK
 * reported it (ackRepeat).
 */
struct AckRecord
{
    static constexpr size_t SIZE = 16;            //!< record length without the bitmap
    static constexpr size_t ACK_DELAY = 12;       //!< offset of AckDelay
    static constexpr uint8_t FLAG_SACK = 0x08;    //!< the SACK bitmap follows
    static constexpr int64_t DELAY_UNIT_NS = 8;   //!< AckDelay unit
    static constexpr uint16_t DELAY_MAX = 0xFFFF; //!< AckDelay saturates here

    Mah mah;           //!< the path's state (rateHint: from the Mch; sack: zero if absent)
    uint16_t delay{0}; //!< AckDelay, units of DELAY_UNIT_NS

    /// \return the bytes the record of \p mah takes on the wire.
    static size_t Length(const Mah& mah);
    /// Write the record of \p mah held for \p delay units to \p p. \return its length.
    static size_t Write(uint8_t* p, const Mah& mah, uint16_t delay);
    /**
     * Read the record at \p p, of at most \p len bytes, into \p out.
     * \return its length, or 0 if \p len is too short.
     */
    static size_t Read(const uint8_t* p, size_t len, AckRecord& out);
};

/**
 * MetaRoCE NAK Header (16 bytes): the responder rejected one packet. The packet is not
 * acknowledged on its path (it was not placed), so a lost NAK is repaired like a lost
 * packet: the sender resends and the responder NAKs again.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +-------------------------------+---------------+---------------+
 |           StreamId            |   Syndrome    |    PathId     |
 +-------------------------------+---------------+---------------+
 |                        MessageSeq                             |
 +---------------------------------------------------------------+
 |                  Offset of the rejected payload               |
 +---------------+-----------------------------------------------+
 |   PathEpoch   |             PSN of the rejected packet        |
 +---------------+-----------------------------------------------+
 \endverbatim
 */
struct Mnh
{
    static constexpr size_t SIZE = 16;       //!< header length
    static constexpr size_t STREAM_ID = 0;   //!< offset of StreamId
    static constexpr size_t SYNDROME = 2;    //!< offset of Syndrome
    static constexpr size_t PATH_ID = 3;     //!< offset of PathId
    static constexpr size_t MESSAGE_SEQ = 4; //!< offset of MessageSeq
    static constexpr size_t OFFSET = 8;      //!< offset of Offset
    static constexpr size_t PATH_EPOCH = 12; //!< offset of PathEpoch
    static constexpr size_t PSN = 13;        //!< offset of the 24-bit PSN

    /// Why the receiver rejected the packet.
    enum Syndrome : uint8_t
    {
        RNR = 1,             //!< no receive posted for the slot yet: resend later
        REMOTE_ACCESS = 2,   //!< bad R_Key, bounds or permissions
        INVALID_REQUEST = 3, //!< message does not fit the receive buffer, or inconsistent
        REMOTE_OPERATION = 4 //!< receiver cannot complete the operation
    };

    uint16_t streamId{0};   //!< stream of the message
    uint8_t syndrome{0};    //!< one of Syndrome
    uint8_t pathId{0};      //!< path of the rejected packet
    uint32_t messageSeq{0}; //!< message rejected
    uint32_t offset{0};     //!< payload offset of the rejected packet
    uint8_t pathEpoch{0};   //!< epoch of the rejected packet's path
    uint32_t psn{0};        //!< PSN of the rejected packet

    /// \return the header parsed from \p p.
    static Mnh Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * IRN Request Header (8 bytes), in every data packet of the RoCEv2 baseline's IRN recovery
 * mode (IRN_* opcodes): what a responder needs to place a packet that arrives out of order
 * (Mittal et al., SIGCOMM 2018, section 5: packet offset and receive WQE sequence number).
 * IRN WRITE packets also carry the message's RETH on every packet. Our encoding: IRN's
 * wire format is not standardised.
 *
 * \verbatim
  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +---------------------------------------------------------------+
 |               Offset of the payload in the message            |
 +---------------------------------------------------------------+
 |   RecvWqeSn: receive WQE this message consumes (SEND, imm)    |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct Irh
{
    static constexpr size_t SIZE = 8;        //!< header length
    static constexpr size_t OFFSET = 0;      //!< offset of Offset
    static constexpr size_t RECV_WQE_SN = 4; //!< offset of RecvWqeSn

    uint32_t offset{0};    //!< byte offset of this payload within the message
    uint32_t recvWqeSn{0}; //!< sequence number of the receive WQE the message consumes

    /// \return the header parsed from \p p.
    static Irh Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * IRN SACK Header (4 bytes), after the AETH of an IRN NACK (opcode IRN_NACK): the PSN whose
 * out-of-order arrival triggered the NACK. The BTH PSN is the responder's expected PSN (the
 * cumulative acknowledgement), as in a PSN sequence error NAK.
 *
 * \verbatim
 +---------------+-----------------------------------------------+
 |   Reserved    |        SackPsn (24): PSN received out of order|
 +---------------+-----------------------------------------------+
 \endverbatim
 */
struct Ish
{
    static constexpr size_t SIZE = 4;     //!< header length
    static constexpr size_t SACK_PSN = 1; //!< offset of the 24-bit SackPsn

    uint32_t sackPsn{0}; //!< PSN that arrived out of order and was placed

    /// \return the header parsed from \p p.
    static Ish Read(const uint8_t* p);
    /// Write the header to \p p.
    void Write(uint8_t* p) const;
};

/**
 * The 16 reserved bytes that follow the BTH of a RoCEv2 Congestion Notification Packet
 * (InfiniBand Architecture Specification, Annex A17 "RoCEv2", CNP format). Senders write
 * zeros; receivers ignore the contents.
 *
 * \verbatim
 +---------------------------------------------------------------+
 |                Reserved (16 bytes, zero)                      |
 +---------------------------------------------------------------+
 \endverbatim
 */
struct CnpPad
{
    static constexpr size_t SIZE = 16; //!< header length
};

/// Headers that follow the BTH, as bits of OpcodeInfo::headers (in wire order).
enum HeaderBit : uint32_t
{
    HDR_MDH = 1u << 0,             //!< MetaRoCE data header
    HDR_RETH = 1u << 1,            //!< RDMA extended transport header
    HDR_RSH = 1u << 2,             //!< MetaRoCE receive slot header
    HDR_IMMDT = 1u << 3,           //!< immediate data
    HDR_AETH = 1u << 4,            //!< ACK extended transport header
    HDR_MAH = 1u << 5,             //!< MetaRoCE ACK header
    HDR_MNH = 1u << 6,             //!< MetaRoCE NAK header
    HDR_CNP_PAD = 1u << 7,         //!< the 16 reserved bytes after the BTH of a RoCEv2 CNP
    HDR_IRH = 1u << 8,             //!< IRN request header (after RETH)
    HDR_ISH = 1u << 9,             //!< IRN SACK header (after AETH)
    HDR_MCH = 1u << 10,            //!< MetaRoCE coalesced ACK header
    HDR_ATOMIC_ETH = 1u << 11,     //!< atomic extended transport header (requests)
    HDR_ATOMIC_ACK_ETH = 1u << 12, //!< atomic acknowledge header (after AETH)
};

/// Which transport an opcode belongs to.
enum class Transport : uint8_t
{
    ROCEV2,   //!< InfiniBand reliable connection over RoCEv2
    METAROCE, //!< our MetaRoCE model
    CNP,      //!< RoCEv2 congestion notification packet
};

/// What role a packet plays.
enum class PacketKind : uint8_t
{
    DATA, //!< carries payload to place
    ACK,  //!< acknowledgement / NAK
    /// RDMA READ response or atomic acknowledge: answers a request, to the requester
    RESPONSE,
    PROBE, //!< path probe
    CNP,   //!< congestion notification
};

/// Position of a packet within a RoCEv2 multi-packet message.
enum class MessagePosition : uint8_t
{
    NONE,   //!< not a data packet, or MetaRoCE (position carried by Offset)
    FIRST,  //!< first packet of a multi-packet message
    MIDDLE, //!< middle packet
    LAST,   //!< last packet
    ONLY,   //!< single-packet message
};

/// One row of the opcode table: what an opcode means and which headers it carries.
struct OpcodeInfo
{
    const char* name{nullptr};                       //!< name, nullptr for an unknown opcode
    Transport transport{Transport::METAROCE};        //!< transport
    PacketKind kind{PacketKind::DATA};               //!< role
    MessagePosition position{MessagePosition::NONE}; //!< RoCEv2 message position
    uint32_t headers{0};                             //!< HeaderBit set, in wire order
    bool payload{false};                             //!< may carry payload
    bool write{false};                               //!< RDMA WRITE family
    bool consumesRecv{false};                        //!< consumes a posted receive at the responder
    bool immediate{false};                           //!< carries immediate data
    bool read{false};                                //!< RDMA READ family (request or response)
    bool atomic{false}; //!< atomic family (Compare&Swap, Fetch&Add, Atomic Acknowledge)
};

/// MetaRoCE opcodes, in the manufacturer-specific range (0xC0-0xFF) of the BTH opcode space.
enum MetaRoceOpcode : uint8_t
{
    MR_WRITE = 0xC0,           //!< RDMA WRITE packet (any position)
    MR_WRITE_IMM = 0xC1,       //!< RDMA WRITE with immediate, its last packet (others: MR_WRITE)
    MR_SEND = 0xC2,            //!< SEND packet (any position)
    MR_SEND_IMM = 0xC3,        //!< SEND with immediate, its last packet (others: MR_SEND)
    MR_ACK = 0xC4,             //!< per-path ACK with SACK bitmap and rate hint
    MR_NAK = 0xC5,             //!< message-level NAK
    MR_PROBE = 0xC6,           //!< path probe
    MR_NOP = 0xC7,             //!< PSN filler: resends a PSN whose data is no longer needed
    MR_ACK_COALESCED = 0xC8,   //!< several paths' ACK records (Mch + AckRecords) and a rate hint
    MR_READ_REQUEST = 0xC9,    //!< RDMA READ request (MDH + RETH), a one-packet message
    MR_READ_RESPONSE = 0xCA,   //!< READ response packet (MDH names the READ; any position)
    MR_CMP_SWAP = 0xCB,        //!< Compare&Swap request (MDH + AtomicETH)
    MR_FETCH_ADD = 0xCC,       //!< Fetch&Add request (MDH + AtomicETH)
    MR_ATOMIC_RESPONSE = 0xCD, //!< atomic response (MDH names the request; AtomicAckETH)
};

/// InfiniBand RC opcodes used by the RoCEv2 baseline.
enum RoceOpcode : uint8_t
{
    RC_SEND_FIRST = 0x00,           //!< SEND First
    RC_SEND_MIDDLE = 0x01,          //!< SEND Middle
    RC_SEND_LAST = 0x02,            //!< SEND Last
    RC_SEND_LAST_IMM = 0x03,        //!< SEND Last with Immediate
    RC_SEND_ONLY = 0x04,            //!< SEND Only
    RC_SEND_ONLY_IMM = 0x05,        //!< SEND Only with Immediate
    RC_WRITE_FIRST = 0x06,          //!< RDMA WRITE First
    RC_WRITE_MIDDLE = 0x07,         //!< RDMA WRITE Middle
    RC_WRITE_LAST = 0x08,           //!< RDMA WRITE Last
    RC_WRITE_LAST_IMM = 0x09,       //!< RDMA WRITE Last with Immediate
    RC_WRITE_ONLY = 0x0A,           //!< RDMA WRITE Only
    RC_WRITE_ONLY_IMM = 0x0B,       //!< RDMA WRITE Only with Immediate
    RC_READ_REQUEST = 0x0C,         //!< RDMA READ Request
    RC_READ_RESPONSE_FIRST = 0x0D,  //!< RDMA READ Response First
    RC_READ_RESPONSE_MIDDLE = 0x0E, //!< RDMA READ Response Middle
    RC_READ_RESPONSE_LAST = 0x0F,   //!< RDMA READ Response Last
    RC_READ_RESPONSE_ONLY = 0x10,   //!< RDMA READ Response Only
    RC_ACKNOWLEDGE = 0x11,          //!< Acknowledge
    RC_ATOMIC_ACKNOWLEDGE = 0x12,   //!< Atomic Acknowledge
    RC_CMP_SWAP = 0x13,             //!< Compare & Swap
    RC_FETCH_ADD = 0x14,            //!< Fetch & Add
    ROCE_CNP = 0x81,                //!< RoCEv2 Congestion Notification Packet
};

/**
 * Opcodes of the RoCEv2 baseline's IRN recovery mode, in the manufacturer-specific range:
 * IRN_x = 0xE0 | RC_x, each carrying an IRH (and, for WRITE, a RETH on every packet), and
 * the IRN NACK (AETH + ISH). Go-back-N never sends them.
 */
enum IrnOpcode : uint8_t
{
    IRN_OPCODE_BASE = 0xE0,                                   //!< IRN_x = IRN_OPCODE_BASE | RC_x
    IRN_SEND_FIRST = IRN_OPCODE_BASE | RC_SEND_FIRST,         //!< SEND First
    IRN_SEND_MIDDLE = IRN_OPCODE_BASE | RC_SEND_MIDDLE,       //!< SEND Middle
    IRN_SEND_LAST = IRN_OPCODE_BASE | RC_SEND_LAST,           //!< SEND Last
    IRN_SEND_LAST_IMM = IRN_OPCODE_BASE | RC_SEND_LAST_IMM,   //!< SEND Last with Immediate
    IRN_SEND_ONLY = IRN_OPCODE_BASE | RC_SEND_ONLY,           //!< SEND Only
    IRN_SEND_ONLY_IMM = IRN_OPCODE_BASE | RC_SEND_ONLY_IMM,   //!< SEND Only with Immediate
    IRN_WRITE_FIRST = IRN_OPCODE_BASE | RC_WRITE_FIRST,       //!< RDMA WRITE First
    IRN_WRITE_MIDDLE = IRN_OPCODE_BASE | RC_WRITE_MIDDLE,     //!< RDMA WRITE Middle
    IRN_WRITE_LAST = IRN_OPCODE_BASE | RC_WRITE_LAST,         //!< RDMA WRITE Last
    IRN_WRITE_LAST_IMM = IRN_OPCODE_BASE | RC_WRITE_LAST_IMM, //!< WRITE Last with Immediate
    IRN_WRITE_ONLY = IRN_OPCODE_BASE | RC_WRITE_ONLY,         //!< RDMA WRITE Only
    IRN_WRITE_ONLY_IMM = IRN_OPCODE_BASE | RC_WRITE_ONLY_IMM, //!< WRITE Only with Immediate
    IRN_NACK = IRN_OPCODE_BASE | RC_ACKNOWLEDGE, //!< NACK with SACK information (AETH + ISH)
};

/// \return the table row for \p opcode (row.name == nullptr if the opcode is unknown).
const OpcodeInfo& LookupOpcode(uint8_t opcode);

/// \return the total length of the headers after the BTH listed in \p headers.
size_t ExtensionHeadersLength(uint32_t headers);

/// Why a datagram could not be parsed.
enum class ParseStatus : uint8_t
{
    OK,                 //!< parsed
    TRUNCATED,          //!< shorter than BTH + headers + ICRC
    UNKNOWN_OPCODE,     //!< opcode not in the table
    BAD_VERSION,        //!< BTH TVer is not 0
    BAD_PAD,            //!< PadCnt larger than the payload, or pad on a packet without payload
    UNEXPECTED_PAYLOAD, //!< payload on an opcode that carries none
    BAD_ICRC,           //!< ICRC mismatch
};

/// \return a stable name for \p status.
const char* ParseStatusName(ParseStatus status);

/// A datagram parsed once: the headers present (per the opcode table) and the payload.
struct ParsedPacket
{
    Bth bth;                         //!< base transport header
    const OpcodeInfo* info{nullptr}; //!< table row of bth.opcode
    Mdh mdh;                         //!< valid if info->headers & HDR_MDH
    Reth reth;                       //!< valid if info->headers & HDR_RETH
    Rsh rsh;                         //!< valid if info->headers & HDR_RSH
    uint32_t immDt{0};               //!< valid if info->headers & HDR_IMMDT
    Aeth aeth;                       //!< valid if info->headers & HDR_AETH
    Mah mah;                         //!< valid if info->headers & HDR_MAH
    Mnh mnh;                         //!< valid if info->headers & HDR_MNH
    Irh irh;                         //!< valid if info->headers & HDR_IRH
    Ish ish;                         //!< valid if info->headers & HDR_ISH
    Mch mch;                         //!< valid if info->headers & HDR_MCH
    AtomicEth atomicEth;             //!< valid if info->headers & HDR_ATOMIC_ETH
    AtomicAckEth atomicAckEth;       //!< valid if info->headers & HDR_ATOMIC_ACK_ETH
    const uint8_t* payload{nullptr}; //!< payload bytes (not copied)
    uint32_t payloadLength{0};       //!< payload length without pad
};

/**
 * Parse \p len bytes at \p data (BTH to ICRC inclusive). Checks every length against the
 * opcode table before reading; does not verify the ICRC (the caller knows the addresses).
 */
ParseStatus ParseDatagram(const uint8_t* data, size_t len, ParsedPacket& out);

/**
 * Write BTH, the extension headers of \p pkt.info, \p payloadLength bytes of payload from
 * \p payload (zeros if nullptr; left unwritten if nullptr and not \p writeZeros), the pad and
 * a zero ICRC placeholder into \p out. bth.padCount is computed here.
 * \return the datagram length, or 0 if \p cap is too small.
 */
size_t WriteDatagram(uint8_t* out,
                     size_t cap,
                     ParsedPacket& pkt,
                     const uint8_t* payload,
                     uint32_t payloadLength,
                     bool writeZeros = true);

/// \return the datagram length WriteDatagram would produce.
size_t DatagramLength(const OpcodeInfo& info, uint32_t payloadLength);

} // namespace metaroce

#endif // METAROCE_WIRE_H
