using HybridKV.Utilities;

namespace HybridKV.Tests.Log;

[Trait("Category", "Operations")]
public sealed unsafe class LargeMemoryTests
{
    [Theory]
    [InlineData(4096, 4096, 4096)]
    [InlineData(64 << 10, 64, 64)]
    [InlineData(LargeMemory.HugePageBytes, 4096, LargeMemory.HugePageBytes)]
    [InlineData(3 * LargeMemory.HugePageBytes, 64, LargeMemory.HugePageBytes)]
    public void Blocks_come_zeroed_and_aligned_to_a_huge_page_once_they_can_hold_one(
        int bytes, int alignment, int expectedAlignment)
    {
        byte* memory = (byte*)LargeMemory.AllocateZeroed((nuint)bytes, (nuint)alignment);
        try
        {
            Assert.Equal(0, (long)memory % expectedAlignment);
            var span = new ReadOnlySpan<byte>(memory, bytes);
            Assert.Equal(-1, span.IndexOfAnyExcept((byte)0));
            memory[bytes - 1] = 1;
        }
        finally
        {
            LargeMemory.Free(memory);
        }
    }
}
