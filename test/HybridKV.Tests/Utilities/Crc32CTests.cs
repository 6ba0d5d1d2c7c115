using HybridKV.Checkpoints;

namespace HybridKV.Tests.Utilities;

/// <summary>The one CRC-32C loop (records' and checkpoint parts' checksums) against the standard and a bitwise
/// reference, over every tail a word, a half word and bytes leave.</summary>
[Trait("Category", "Checkpoint")]
public sealed class Crc32CTests
{
    [Fact]
    public void The_standard_check_value_and_a_bitwise_reference_for_every_length_and_split()
    {
        Assert.Equal(0xE3069283u, Crc32C.Compute("123456789"u8));
        byte[] data = [.. Enumerable.Range(0, 41).Select(i => (byte)((i * 73) + 11))];
        for (int length = 0; length <= data.Length; length++)
        {
            uint expected = Bitwise(data.AsSpan(0, length));
            Assert.Equal(expected, Crc32C.Compute(data.AsSpan(0, length)));
            for (int split = 0; split <= length; split++)
            {
                Assert.Equal(expected, Crc32C.Append(Crc32C.Compute(data.AsSpan(0, split)), data.AsSpan(split, length - split)));
            }
        }
    }

    private static uint Bitwise(ReadOnlySpan<byte> data)
    {
        uint crc = uint.MaxValue;
        foreach (byte b in data)
        {
            crc ^= b;
            for (int bit = 0; bit < 8; bit++)
            {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
            }
        }

        return ~crc;
    }
}
