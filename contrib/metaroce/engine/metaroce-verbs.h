/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_VERBS_H
#define METAROCE_VERBS_H

#include <cstdint>

/**
 * \file
 * Verbs-style types shared by every transport engine: work requests, completions with
 * ibv_wc_status-like statuses, memory regions and access flags. The names follow
 * libibverbs (ibv_wc_status, ibv_wr_opcode, ibv_access_flags) so Verbs users recognise them;
 * streams are the MetaRoCE extension (stream 0 is what a plain Verbs user gets).
 */

namespace metaroce
{

/// Work completion status (ibv_wc_status subset).
enum class WcStatus : uint8_t
{
    SUCCESS,           //!< IBV_WC_SUCCESS
    LOC_LEN_ERR,       //!< IBV_WC_LOC_LEN_ERR: incoming message longer than the receive buffer
    LOC_PROT_ERR,      //!< IBV_WC_LOC_PROT_ERR: local buffer not in a valid region
    WR_FLUSH_ERR,      //!< IBV_WC_WR_FLUSH_ERR: flushed because the connection is in error
    REM_INV_REQ_ERR,   //!< IBV_WC_REM_INV_REQ_ERR: responder found the request invalid
    REM_ACCESS_ERR,    //!< IBV_WC_REM_ACCESS_ERR: bad R_Key, bounds or permission at responder
    REM_OP_ERR,        //!< IBV_WC_REM_OP_ERR: responder could not complete the operation
    RETRY_EXC_ERR,     //!< IBV_WC_RETRY_EXC_ERR: no path delivered within the retry budget
    RNR_RETRY_EXC_ERR, //!< IBV_WC_RNR_RETRY_EXC_ERR: receiver never posted a receive
    GENERAL_ERR,       //!< IBV_WC_GENERAL_ERR
};

/// \return the libibverbs-style name of \p status.
const char* WcStatusName(WcStatus status);

/// Operation of a send work request (ibv_wr_opcode subset).
enum class WrOpcode : uint8_t
{
    RDMA_WRITE,          //!< IBV_WR_RDMA_WRITE
    RDMA_WRITE_WITH_IMM, //!< IBV_WR_RDMA_WRITE_WITH_IMM
    SEND,                //!< IBV_WR_SEND
    SEND_WITH_IMM,       //!< IBV_WR_SEND_WITH_IMM
    /// IBV_WR_RDMA_READ: sge.length bytes from remoteAddr/rkey into the local SGE (which
    /// needs ACCESS_LOCAL_WRITE); the remote region needs ACCESS_REMOTE_READ.
    RDMA_READ,
    /// IBV_WR_ATOMIC_CMP_AND_SWP: if the 8 bytes at remoteAddr equal compareAdd, store swap;
    /// the original value lands in the local SGE (8 bytes). The remote region needs
    /// ACCESS_REMOTE_ATOMIC, remoteAddr 8-byte alignment.
    ATOMIC_CMP_AND_SWP,
    /// IBV_WR_ATOMIC_FETCH_AND_ADD: add compareAdd to the 8 bytes at remoteAddr; the
    /// original value lands in the local SGE (8 bytes). Needs as ATOMIC_CMP_AND_SWP.
    ATOMIC_FETCH_AND_ADD,
};

/// \return true if \p op is answered by response packets (RDMA READ and the atomics).
inline bool
IsReadOrAtomic(WrOpcode op)
{
    return op == WrOpcode::RDMA_READ || op == WrOpcode::ATOMIC_CMP_AND_SWP ||
           op == WrOpcode::ATOMIC_FETCH_AND_ADD;
}

/// \return true if \p op is one of the atomics.
inline bool
IsAtomic(WrOpcode op)
{
    return op == WrOpcode::ATOMIC_CMP_AND_SWP || op == WrOpcode::ATOMIC_FETCH_AND_ADD;
}

/// Length of the operand of an atomic operation (IB atomics work on 64-bit words).
constexpr uint32_t ATOMIC_OPERAND_SIZE = 8;

/// \return the libibverbs-style name of \p op.
const char* WrOpcodeName(WrOpcode op);

/// What a completion reports (ibv_wc_opcode subset).
enum class WcOpcode : uint8_t
{
    SEND,               //!< IBV_WC_SEND
    RDMA_WRITE,         //!< IBV_WC_RDMA_WRITE
    RECV,               //!< IBV_WC_RECV
    RECV_RDMA_WITH_IMM, //!< IBV_WC_RECV_RDMA_WITH_IMM
    RDMA_READ,          //!< IBV_WC_RDMA_READ
    COMP_SWAP,          //!< IBV_WC_COMP_SWAP
    FETCH_ADD,          //!< IBV_WC_FETCH_ADD
};

/// \return what the completion of a send work request with \p op reports.
inline WcOpcode
WcOpcodeFor(WrOpcode op)
{
    switch (op)
    {
    case WrOpcode::SEND:
    case WrOpcode::SEND_WITH_IMM:
        return WcOpcode::SEND;
    case WrOpcode::RDMA_READ:
        return WcOpcode::RDMA_READ;
    case WrOpcode::ATOMIC_CMP_AND_SWP:
        return WcOpcode::COMP_SWAP;
    case WrOpcode::ATOMIC_FETCH_AND_ADD:
        return WcOpcode::FETCH_ADD;
    default:
        return WcOpcode::RDMA_WRITE;
    }
}

/// Memory region access rights (ibv_access_flags subset).
enum AccessFlags : uint32_t
{
    ACCESS_LOCAL_WRITE = 1,   //!< IBV_ACCESS_LOCAL_WRITE (needed to receive into it)
    ACCESS_REMOTE_WRITE = 2,  //!< IBV_ACCESS_REMOTE_WRITE
    ACCESS_REMOTE_READ = 4,   //!< IBV_ACCESS_REMOTE_READ
    ACCESS_REMOTE_ATOMIC = 8, //!< IBV_ACCESS_REMOTE_ATOMIC
};

/**
 * A registered memory region. Addresses are I/O virtual addresses: by default the host
 * pointer value, as in Verbs. A region registered with a null host pointer is "virtual":
 * it has addresses, keys and bounds but no bytes (reads yield zeros, writes are counted and
 * discarded), which lets a simulation move terabytes without allocating them.
 */
struct MemoryRegion
{
    uint32_t lkey{0};   //!< local key (0 = invalid region)
    uint32_t rkey{0};   //!< remote key
    uint64_t addr{0};   //!< first I/O virtual address
    uint64_t length{0}; //!< length in bytes
};

/// A scatter/gather element (one per work request in this engine).
struct Sge
{
    uint64_t addr{0};   //!< I/O virtual address in a region registered with lkey
    uint32_t length{0}; //!< bytes
    uint32_t lkey{0};   //!< local key of the region
};

/// A send work request (ibv_send_wr with one SGE).
struct SendWr
{
    uint64_t wrId{0};                      //!< returned in the completion
    WrOpcode opcode{WrOpcode::RDMA_WRITE}; //!< operation
    Sge sge;                               //!< local source (READ, atomics: destination) buffer
    uint64_t remoteAddr{0};                //!< WRITE, READ, atomics: remote I/O virtual address
    uint32_t rkey{0};                      //!< WRITE, READ, atomics: remote key
    uint64_t compareAdd{0}; //!< CMP_AND_SWP: value compared; FETCH_AND_ADD: value added
    uint64_t swap{0};       //!< CMP_AND_SWP: value stored if the comparison holds
    uint32_t immData{0};    //!< *_WITH_IMM: immediate data
    uint16_t streamId{0};   //!< MetaRoCE extension: ordered stream
    bool signaled{true};    //!< produce a completion on success
};

/// A receive work request (ibv_recv_wr with one SGE).
struct RecvWr
{
    uint64_t wrId{0};     //!< returned in the completion
    Sge sge;              //!< local destination buffer
    uint16_t streamId{0}; //!< MetaRoCE extension: stream whose messages it receives
};

/// A work completion (ibv_wc subset).
struct Completion
{
    uint64_t wrId{0};                   //!< the work request's id
    WcStatus status{WcStatus::SUCCESS}; //!< outcome
    WcOpcode opcode{WcOpcode::SEND};    //!< what completed
    uint32_t connectionId{0};           //!< local connection (QP number)
    uint32_t byteLen{0};                //!< bytes received (receive completions)
    uint32_t immData{0};                //!< immediate data if hasImm
    bool hasImm{false};                 //!< IBV_WC_WITH_IMM
    uint16_t streamId{0};               //!< stream of the message
};

/// Result of posting a work request or creating a connection (the call itself failed).
enum class PostStatus : uint8_t
{
    OK,                 //!< accepted
    INVALID_CONNECTION, //!< no such connection
    NOT_CONNECTED,      //!< Connect() not called yet
    CONNECTION_ERROR,   //!< the connection is in the error state
    INVALID_STREAM,     //!< stream id beyond the configured maximum
    INVALID_LKEY,       //!< local buffer not inside a region with that key
    NO_PERMISSION,      //!< region lacks the access the operation needs
    TOO_LONG,           //!< longer than the maximum message size
    QUEUE_FULL,         //!< too many outstanding work requests
    INVALID_ARGUMENT,   //!< anything else
    NOT_SUPPORTED,      //!< the transport does not offer this operation (EOPNOTSUPP)
};

/// \return the name of \p status.
const char* PostStatusName(PostStatus status);

} // namespace metaroce

#endif // METAROCE_VERBS_H
