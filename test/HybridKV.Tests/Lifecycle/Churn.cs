using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Session = HybridKV.Sessions.Session<long, long, long, long, HybridKV.Tests.Support.CountContext?, HybridKV.Tests.Support.CountFunctions>;

namespace HybridKV.Tests.Lifecycle;

/// <summary>A fixed key set written over and over, with some keys deleted, and the model of what it should hold.</summary>
internal static class Churn
{
    /// <summary>Writes keys 0 to <paramref name="keys"/> - 1 <paramref name="rounds"/> times (value round * 1_000_000
    /// + key), so that all but the last round are garbage, then deletes every <paramref name="deleteEvery"/>th key.</summary>
    public static Dictionary<long, long> Run(Session session, int keys, int rounds, int deleteEvery)
    {
        var model = new Dictionary<long, long>();
        for (int round = 1; round <= rounds; round++)
        {
            for (long k = 0; k < keys; k++)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, round * 1_000_000L + k));
                model[k] = round * 1_000_000L + k;
            }
        }

        for (long k = 0; k < keys; k += deleteEvery)
        {
            Assert.NotEqual(Status.Error, session.DeleteNow(k));
            model.Remove(k);
        }

        return model;
    }

    /// <summary>Every key from 0 to <paramref name="keys"/> - 1 reads as the model says (absent keys as not found).</summary>
    public static void AssertMatches(Session session, int keys, Dictionary<long, long> model)
    {
        for (long k = 0; k < keys; k++)
        {
            (Status status, long value) = session.ReadNow(k);
            if (model.TryGetValue(k, out long expected))
            {
                Assert.Equal((Status.Ok, expected), (status, value));
            }
            else
            {
                Assert.Equal(Status.NotFound, status);
            }
        }
    }
}
