/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_GILBERT_ELLIOTT_ERROR_MODEL_H
#define METAROCE_GILBERT_ELLIOTT_ERROR_MODEL_H

#include "ns3/error-model.h"
#include "ns3/random-variable-stream.h"

#include <cstdint>

/**
 * \file
 * Bursty packet loss: the two-state Gilbert-Elliott model.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * Per-packet bursty loss with a two-state Markov chain (Gilbert-Elliott).
 *
 * The chain is in state GOOD or BAD. For each packet, the model first decides loss with the
 * current state's loss probability (GoodLossRate h_G or BadLossRate h_B), then moves: GOOD to
 * BAD with probability p (GoodToBad), BAD to GOOD with probability r (BadToGood). The chain
 * starts in GOOD.
 *
 * Stationary probabilities: pi_B = p / (p + r), pi_G = r / (p + r). Long-run loss rate:
 * \f[ \bar{L} = \frac{r\,h_G + p\,h_B}{p + r} \f]
 * (GetMeanLossRate()). Mean sojourn in BAD is 1/r packets, so with h_G = 0 and h_B = 1
 * losses come in bursts of mean length 1/r.
 *
 * The model draws two uniform numbers per packet from one stream (AssignStreams uses 1).
 */
class MetaRoceGilbertElliottErrorModel : public ErrorModel
{
  public:
    /// The chain's states.
    enum State
    {
        GOOD, //!< good state
        BAD,  //!< bad (burst) state
    };

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceGilbertElliottErrorModel();
    ~MetaRoceGilbertElliottErrorModel() override;

    /// \return the long-run loss rate (r h_G + p h_B) / (p + r) of the configured chain.
    double GetMeanLossRate() const;

    /// \return the current state.
    State GetState() const;

    /**
     * Assign a fixed random variable stream.
     * \param stream the stream index
     * \return the number of streams used (1)
     */
    int64_t AssignStreams(int64_t stream);

  private:
    bool DoCorrupt(Ptr<Packet> p) override;
    void DoReset() override;

    double m_goodLossRate;                //!< h_G: loss probability in GOOD
    double m_badLossRate;                 //!< h_B: loss probability in BAD
    double m_goodToBad;                   //!< p: probability of GOOD -> BAD after a packet
    double m_badToGood;                   //!< r: probability of BAD -> GOOD after a packet
    State m_state{GOOD};                  //!< current state
    Ptr<UniformRandomVariable> m_uniform; //!< the random stream
};

} // namespace ns3

#endif // METAROCE_GILBERT_ELLIOTT_ERROR_MODEL_H
