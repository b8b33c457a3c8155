/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_STACK_HELPER_H
#define METAROCE_STACK_HELPER_H

#include "metaroce-nic.h"

#include "ns3/attribute.h"
#include "ns3/object-factory.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

/**
 * \file
 * Installers of host NICs on a fabric, and the simulated control plane that connects them.
 */

namespace ns3
{

class MetaRoceFabric;

/**
 * \ingroup metaroce
 * Puts a MetaRoceNic on every host of a MetaRoceFabric (attached to all the host's ports,
 * one per plane).
 */
class MetaRoceStackHelper
{
  public:
    MetaRoceStackHelper();

    /**
     * Set an attribute of every NIC created (endpoint and default connection settings).
     * \param name attribute name
     * \param value its value
     */
    void SetNicAttribute(std::string name, const AttributeValue& value);

    /**
     * Install a NIC on every host of \p fabric.
     * \param fabric the fabric
     * \return the NICs, indexed like the fabric's hosts
     */
    std::vector<Ptr<MetaRoceNic>> Install(Ptr<MetaRoceFabric> fabric) const;

    /**
     * Install a NIC on host \p host of \p fabric.
     * \param fabric the fabric
     * \param host host index
     * \return the NIC
     */
    Ptr<MetaRoceNic> Install(Ptr<MetaRoceFabric> fabric, uint32_t host) const;

    /**
     * Assign fixed random streams to NICs (call before any connection is created).
     * \param nics the NICs
     * \param stream first stream index
     * \return the number of streams used
     */
    static int64_t AssignStreams(const std::vector<Ptr<MetaRoceNic>>& nics, int64_t stream);

  private:
    ObjectFactory m_factory; //!< NIC attributes
};

/**
 * \ingroup metaroce
 * The simulated control plane: creates the two ends of a connection and binds them, in one
 * call (in a real deployment this is an out-of-band exchange of QPNs and addresses).
 */
class MetaRoceConnectionHelper
{
  public:
    /**
     * Connect two NICs with the default connection configuration of \p a.
     * \param a one NIC
     * \param b the other NIC
     * \return the QPNs (on a, on b); aborts with the reason if the engine refuses
     */
    static std::pair<uint32_t, uint32_t> Connect(Ptr<MetaRoceNic> a, Ptr<MetaRoceNic> b);

    /**
     * Connect two NICs with \p cfg on both ends (the ends must agree on mtu, numPaths and
     * maxOutstandingWrs).
     * \param a one NIC
     * \param b the other NIC
     * \param cfg the configuration of both ends
     * \return the QPNs (on a, on b); aborts with the reason if the engine refuses
     */
    static std::pair<uint32_t, uint32_t> Connect(Ptr<MetaRoceNic> a,
                                                 Ptr<MetaRoceNic> b,
                                                 const metaroce::ConnectionConfig& cfg);
};

} // namespace ns3

#endif // METAROCE_STACK_HELPER_H
