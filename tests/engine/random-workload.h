/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_RANDOM_WORKLOAD_H
#define METAROCE_TEST_RANDOM_WORKLOAD_H

#include "metaroce-random.h"
#include "metaroce-verbs.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * The random message mix of the property tests (MetaRoCE and RoCEv2): up to 24 messages of
 * every work-request opcode, lengths 0 to 24,000 bytes, each with its own slice of the
 * source buffer and of the destination buffer, separated by 64-byte gaps that must stay zero.
 */

namespace metaroce
{
namespace test
{

/// One message of a random workload.
struct RandomMessage
{
    WrOpcode op;      //!< work-request opcode (SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM)
    uint16_t stream;  //!< stream (0 unless streams were drawn)
    uint32_t length;  //!< payload bytes (0 for about one message in eight)
    size_t srcOffset; //!< where its bytes start in RandomWorkload::src
    size_t dstOffset; //!< where they must land in RandomWorkload::dst
    uint32_t imm;     //!< immediate data
};

/// Messages, the source bytes (never zero) and the zeroed destination.
struct RandomWorkload
{
    std::vector<RandomMessage> msgs; //!< the messages, in posting order
    std::vector<uint8_t> src;        //!< source buffer: srcBytes + 1 nonzero bytes
    std::vector<uint8_t> dst;        //!< destination buffer, zero, with the gaps
    size_t srcBytes{0};              //!< payload bytes of all messages
};

/**
 * Draw a workload.
 * \param r the schedule's generator
 * \param streams draw a stream per message below this (0: no draw, every stream 0)
 * \return the workload
 */
inline RandomWorkload
DrawRandomWorkload(Rng& r, uint32_t streams)
{
    RandomWorkload w;
    const uint32_t count = 1 + uint32_t(r.Below(24));
    size_t dstSize = 0;
    for (uint32_t i = 0; i < count; ++i)
    {
        RandomMessage m;
        m.op = WrOpcode(r.Below(4));
        m.stream = streams ? uint16_t(r.Below(streams)) : 0;
        m.length = r.Below(8) == 0 ? 0 : uint32_t(1 + r.Below(24000));
        m.srcOffset = w.srcBytes;
        m.dstOffset = dstSize;
        m.imm = uint32_t(r.Next());
        w.srcBytes += m.length;
        dstSize += m.length + 64; // a gap: bytes there must stay untouched
        w.msgs.push_back(m);
    }
    w.src.resize(w.srcBytes + 1);
    w.dst.assign(dstSize + 1, 0);
    for (auto& byte : w.src)
    {
        byte = uint8_t(r.Next() | 1); // never zero, so untouched bytes are detectable
    }
    return w;
}

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_RANDOM_WORKLOAD_H
