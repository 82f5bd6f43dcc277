/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the SSE4.2 crc32
 * instruction when the CPU has it (three interleaved streams joined with
 * PCLMULQDQ when that is there too), else slicing-by-8 over constant tables.
 *
 * The tables are a literal (generated once from the polynomial; any entry
 * can be checked with the bitwise loop in tests/unit/test_crc32c.c) so the
 * library keeps no lazily-filled mutable state. The one mutable static is
 * the cached CPU-feature answer, an atomic written at most once per value.
 *
 * Build with -DHK_CRC32C_FORCE_PORTABLE to compile the portable path only
 * (the test_crc32c_portable executable does, to test it on any CPU).
 *
 * hk__crc32c_copy() is the same CRC fused with a copy, for a restore that
 * moves a tensor from the page cache into a variable: one pass over the
 * source, each word checked while it is in a register on its way to the
 * destination (folded 64 bytes per instruction with VPCLMULQDQ where the
 * CPU has it and AVX-512, so the copy sets the pace). hk__crc32c_combine() joins the CRCs of adjacent pieces, so
 * pieces of one tensor can be checked on different threads.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/checkpoint.h"
#include "util/crc32c.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if !defined(HK_CRC32C_FORCE_PORTABLE) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HAVE_SSE42 1
#include <immintrin.h>
#include <nmmintrin.h>
#include <wmmintrin.h>
#include <stdatomic.h>
#endif

static const uint32_t crc32c_table[8][256] = {
    {
        0x00000000U, 0xf26b8303U, 0xe13b70f7U, 0x1350f3f4U, 0xc79a971fU, 0x35f1141cU, 0x26a1e7e8U, 0xd4ca64ebU,
        0x8ad958cfU, 0x78b2dbccU, 0x6be22838U, 0x9989ab3bU, 0x4d43cfd0U, 0xbf284cd3U, 0xac78bf27U, 0x5e133c24U,
        0x105ec76fU, 0xe235446cU, 0xf165b798U, 0x030e349bU, 0xd7c45070U, 0x25afd373U, 0x36ff2087U, 0xc494a384U,
        0x9a879fa0U, 0x68ec1ca3U, 0x7bbcef57U, 0x89d76c54U, 0x5d1d08bfU, 0xaf768bbcU, 0xbc267848U, 0x4e4dfb4bU,
        0x20bd8edeU, 0xd2d60dddU, 0xc186fe29U, 0x33ed7d2aU, 0xe72719c1U, 0x154c9ac2U, 0x061c6936U, 0xf477ea35U,
        0xaa64d611U, 0x580f5512U, 0x4b5fa6e6U, 0xb93425e5U, 0x6dfe410eU, 0x9f95c20dU, 0x8cc531f9U, 0x7eaeb2faU,
        0x30e349b1U, 0xc288cab2U, 0xd1d83946U, 0x23b3ba45U, 0xf779deaeU, 0x05125dadU, 0x1642ae59U, 0xe4292d5aU,
        0xba3a117eU, 0x4851927dU, 0x5b016189U, 0xa96ae28aU, 0x7da08661U, 0x8fcb0562U, 0x9c9bf696U, 0x6ef07595U,
        0x417b1dbcU, 0xb3109ebfU, 0xa0406d4bU, 0x522bee48U, 0x86e18aa3U, 0x748a09a0U, 0x67dafa54U, 0x95b17957U,
        0xcba24573U, 0x39c9c670U, 0x2a993584U, 0xd8f2b687U, 0x0c38d26cU, 0xfe53516fU, 0xed03a29bU, 0x1f682198U,
        0x5125dad3U, 0xa34e59d0U, 0xb01eaa24U, 0x42752927U, 0x96bf4dccU, 0x64d4cecfU, 0x77843d3bU, 0x85efbe38U,
        0xdbfc821cU, 0x2997011fU, 0x3ac7f2ebU, 0xc8ac71e8U, 0x1c661503U, 0xee0d9600U, 0xfd5d65f4U, 0x0f36e6f7U,
        0x61c69362U, 0x93ad1061U, 0x80fde395U, 0x72966096U, 0xa65c047dU, 0x5437877eU, 0x4767748aU, 0xb50cf789U,
        0xeb1fcbadU, 0x197448aeU, 0x0a24bb5aU, 0xf84f3859U, 0x2c855cb2U, 0xdeeedfb1U, 0xcdbe2c45U, 0x3fd5af46U,
        0x7198540dU, 0x83f3d70eU, 0x90a324faU, 0x62c8a7f9U, 0xb602c312U, 0x44694011U, 0x5739b3e5U, 0xa55230e6U,
        0xfb410cc2U, 0x092a8fc1U, 0x1a7a7c35U, 0xe811ff36U, 0x3cdb9bddU, 0xceb018deU, 0xdde0eb2aU, 0x2f8b6829U,
        0x82f63b78U, 0x709db87bU, 0x63cd4b8fU, 0x91a6c88cU, 0x456cac67U, 0xb7072f64U, 0xa457dc90U, 0x563c5f93U,
        0x082f63b7U, 0xfa44e0b4U, 0xe9141340U, 0x1b7f9043U, 0xcfb5f4a8U, 0x3dde77abU, 0x2e8e845fU, 0xdce5075cU,
        0x92a8fc17U, 0x60c37f14U, 0x73938ce0U, 0x81f80fe3U, 0x55326b08U, 0xa759e80bU, 0xb4091bffU, 0x466298fcU,
        0x1871a4d8U, 0xea1a27dbU, 0xf94ad42fU, 0x0b21572cU, 0xdfeb33c7U, 0x2d80b0c4U, 0x3ed04330U, 0xccbbc033U,
        0xa24bb5a6U, 0x502036a5U, 0x4370c551U, 0xb11b4652U, 0x65d122b9U, 0x97baa1baU, 0x84ea524eU, 0x7681d14dU,
        0x2892ed69U, 0xdaf96e6aU, 0xc9a99d9eU, 0x3bc21e9dU, 0xef087a76U, 0x1d63f975U, 0x0e330a81U, 0xfc588982U,
        0xb21572c9U, 0x407ef1caU, 0x532e023eU, 0xa145813dU, 0x758fe5d6U, 0x87e466d5U, 0x94b49521U, 0x66df1622U,
        0x38cc2a06U, 0xcaa7a905U, 0xd9f75af1U, 0x2b9cd9f2U, 0xff56bd19U, 0x0d3d3e1aU, 0x1e6dcdeeU, 0xec064eedU,
        0xc38d26c4U, 0x31e6a5c7U, 0x22b65633U, 0xd0ddd530U, 0x0417b1dbU, 0xf67c32d8U, 0xe52cc12cU, 0x1747422fU,
        0x49547e0bU, 0xbb3ffd08U, 0xa86f0efcU, 0x5a048dffU, 0x8ecee914U, 0x7ca56a17U, 0x6ff599e3U, 0x9d9e1ae0U,
        0xd3d3e1abU, 0x21b862a8U, 0x32e8915cU, 0xc083125fU, 0x144976b4U, 0xe622f5b7U, 0xf5720643U, 0x07198540U,
        0x590ab964U, 0xab613a67U, 0xb831c993U, 0x4a5a4a90U, 0x9e902e7bU, 0x6cfbad78U, 0x7fab5e8cU, 0x8dc0dd8fU,
        0xe330a81aU, 0x115b2b19U, 0x020bd8edU, 0xf0605beeU, 0x24aa3f05U, 0xd6c1bc06U, 0xc5914ff2U, 0x37faccf1U,
        0x69e9f0d5U, 0x9b8273d6U, 0x88d28022U, 0x7ab90321U, 0xae7367caU, 0x5c18e4c9U, 0x4f48173dU, 0xbd23943eU,
        0xf36e6f75U, 0x0105ec76U, 0x12551f82U, 0xe03e9c81U, 0x34f4f86aU, 0xc69f7b69U, 0xd5cf889dU, 0x27a40b9eU,
        0x79b737baU, 0x8bdcb4b9U, 0x988c474dU, 0x6ae7c44eU, 0xbe2da0a5U, 0x4c4623a6U, 0x5f16d052U, 0xad7d5351U,
    },
    {
        0x00000000U, 0x13a29877U, 0x274530eeU, 0x34e7a899U, 0x4e8a61dcU, 0x5d28f9abU, 0x69cf5132U, 0x7a6dc945U,
        0x9d14c3b8U, 0x8eb65bcfU, 0xba51f356U, 0xa9f36b21U, 0xd39ea264U, 0xc03c3a13U, 0xf4db928aU, 0xe7790afdU,
        0x3fc5f181U, 0x2c6769f6U, 0x1880c16fU, 0x0b225918U, 0x714f905dU, 0x62ed082aU, 0x560aa0b3U, 0x45a838c4U,
        0xa2d13239U, 0xb173aa4eU, 0x859402d7U, 0x96369aa0U, 0xec5b53e5U, 0xfff9cb92U, 0xcb1e630bU, 0xd8bcfb7cU,
        0x7f8be302U, 0x6c297b75U, 0x58ced3ecU, 0x4b6c4b9bU, 0x310182deU, 0x22a31aa9U, 0x1644b230U, 0x05e62a47U,
        0xe29f20baU, 0xf13db8cdU, 0xc5da1054U, 0xd6788823U, 0xac154166U, 0xbfb7d911U, 0x8b507188U, 0x98f2e9ffU,
        0x404e1283U, 0x53ec8af4U, 0x670b226dU, 0x74a9ba1aU, 0x0ec4735fU, 0x1d66eb28U, 0x298143b1U, 0x3a23dbc6U,
        0xdd5ad13bU, 0xcef8494cU, 0xfa1fe1d5U, 0xe9bd79a2U, 0x93d0b0e7U, 0x80722890U, 0xb4958009U, 0xa737187eU,
        0xff17c604U, 0xecb55e73U, 0xd852f6eaU, 0xcbf06e9dU, 0xb19da7d8U, 0xa23f3fafU, 0x96d89736U, 0x857a0f41U,
        0x620305bcU, 0x71a19dcbU, 0x45463552U, 0x56e4ad25U, 0x2c896460U, 0x3f2bfc17U, 0x0bcc548eU, 0x186eccf9U,
        0xc0d23785U, 0xd370aff2U, 0xe797076bU, 0xf4359f1cU, 0x8e585659U, 0x9dface2eU, 0xa91d66b7U, 0xbabffec0U,
        0x5dc6f43dU, 0x4e646c4aU, 0x7a83c4d3U, 0x69215ca4U, 0x134c95e1U, 0x00ee0d96U, 0x3409a50fU, 0x27ab3d78U,
        0x809c2506U, 0x933ebd71U, 0xa7d915e8U, 0xb47b8d9fU, 0xce1644daU, 0xddb4dcadU, 0xe9537434U, 0xfaf1ec43U,
        0x1d88e6beU, 0x0e2a7ec9U, 0x3acdd650U, 0x296f4e27U, 0x53028762U, 0x40a01f15U, 0x7447b78cU, 0x67e52ffbU,
        0xbf59d487U, 0xacfb4cf0U, 0x981ce469U, 0x8bbe7c1eU, 0xf1d3b55bU, 0xe2712d2cU, 0xd69685b5U, 0xc5341dc2U,
        0x224d173fU, 0x31ef8f48U, 0x050827d1U, 0x16aabfa6U, 0x6cc776e3U, 0x7f65ee94U, 0x4b82460dU, 0x5820de7aU,
        0xfbc3faf9U, 0xe861628eU, 0xdc86ca17U, 0xcf245260U, 0xb5499b25U, 0xa6eb0352U, 0x920cabcbU, 0x81ae33bcU,
        0x66d73941U, 0x7575a136U, 0x419209afU, 0x523091d8U, 0x285d589dU, 0x3bffc0eaU, 0x0f186873U, 0x1cbaf004U,
        0xc4060b78U, 0xd7a4930fU, 0xe3433b96U, 0xf0e1a3e1U, 0x8a8c6aa4U, 0x992ef2d3U, 0xadc95a4aU, 0xbe6bc23dU,
        0x5912c8c0U, 0x4ab050b7U, 0x7e57f82eU, 0x6df56059U, 0x1798a91cU, 0x043a316bU, 0x30dd99f2U, 0x237f0185U,
        0x844819fbU, 0x97ea818cU, 0xa30d2915U, 0xb0afb162U, 0xcac27827U, 0xd960e050U, 0xed8748c9U, 0xfe25d0beU,
        0x195cda43U, 0x0afe4234U, 0x3e19eaadU, 0x2dbb72daU, 0x57d6bb9fU, 0x447423e8U, 0x70938b71U, 0x63311306U,
        0xbb8de87aU, 0xa82f700dU, 0x9cc8d894U, 0x8f6a40e3U, 0xf50789a6U, 0xe6a511d1U, 0xd242b948U, 0xc1e0213fU,
        0x26992bc2U, 0x353bb3b5U, 0x01dc1b2cU, 0x127e835bU, 0x68134a1eU, 0x7bb1d269U, 0x4f567af0U, 0x5cf4e287U,
        0x04d43cfdU, 0x1776a48aU, 0x23910c13U, 0x30339464U, 0x4a5e5d21U, 0x59fcc556U, 0x6d1b6dcfU, 0x7eb9f5b8U,
        0x99c0ff45U, 0x8a626732U, 0xbe85cfabU, 0xad2757dcU, 0xd74a9e99U, 0xc4e806eeU, 0xf00fae77U, 0xe3ad3600U,
        0x3b11cd7cU, 0x28b3550bU, 0x1c54fd92U, 0x0ff665e5U, 0x759baca0U, 0x663934d7U, 0x52de9c4eU, 0x417c0439U,
        0xa6050ec4U, 0xb5a796b3U, 0x81403e2aU, 0x92e2a65dU, 0xe88f6f18U, 0xfb2df76fU, 0xcfca5ff6U, 0xdc68c781U,
        0x7b5fdfffU, 0x68fd4788U, 0x5c1aef11U, 0x4fb87766U, 0x35d5be23U, 0x26772654U, 0x12908ecdU, 0x013216baU,
        0xe64b1c47U, 0xf5e98430U, 0xc10e2ca9U, 0xd2acb4deU, 0xa8c17d9bU, 0xbb63e5ecU, 0x8f844d75U, 0x9c26d502U,
        0x449a2e7eU, 0x5738b609U, 0x63df1e90U, 0x707d86e7U, 0x0a104fa2U, 0x19b2d7d5U, 0x2d557f4cU, 0x3ef7e73bU,
        0xd98eedc6U, 0xca2c75b1U, 0xfecbdd28U, 0xed69455fU, 0x97048c1aU, 0x84a6146dU, 0xb041bcf4U, 0xa3e32483U,
    },
    {
        0x00000000U, 0xa541927eU, 0x4f6f520dU, 0xea2ec073U, 0x9edea41aU, 0x3b9f3664U, 0xd1b1f617U, 0x74f06469U,
        0x38513ec5U, 0x9d10acbbU, 0x773e6cc8U, 0xd27ffeb6U, 0xa68f9adfU, 0x03ce08a1U, 0xe9e0c8d2U, 0x4ca15aacU,
        0x70a27d8aU, 0xd5e3eff4U, 0x3fcd2f87U, 0x9a8cbdf9U, 0xee7cd990U, 0x4b3d4beeU, 0xa1138b9dU, 0x045219e3U,
        0x48f3434fU, 0xedb2d131U, 0x079c1142U, 0xa2dd833cU, 0xd62de755U, 0x736c752bU, 0x9942b558U, 0x3c032726U,
        0xe144fb14U, 0x4405696aU, 0xae2ba919U, 0x0b6a3b67U, 0x7f9a5f0eU, 0xdadbcd70U, 0x30f50d03U, 0x95b49f7dU,
        0xd915c5d1U, 0x7c5457afU, 0x967a97dcU, 0x333b05a2U, 0x47cb61cbU, 0xe28af3b5U, 0x08a433c6U, 0xade5a1b8U,
        0x91e6869eU, 0x34a714e0U, 0xde89d493U, 0x7bc846edU, 0x0f382284U, 0xaa79b0faU, 0x40577089U, 0xe516e2f7U,
        0xa9b7b85bU, 0x0cf62a25U, 0xe6d8ea56U, 0x43997828U, 0x37691c41U, 0x92288e3fU, 0x78064e4cU, 0xdd47dc32U,
        0xc76580d9U, 0x622412a7U, 0x880ad2d4U, 0x2d4b40aaU, 0x59bb24c3U, 0xfcfab6bdU, 0x16d476ceU, 0xb395e4b0U,
        0xff34be1cU, 0x5a752c62U, 0xb05bec11U, 0x151a7e6fU, 0x61ea1a06U, 0xc4ab8878U, 0x2e85480bU, 0x8bc4da75U,
        0xb7c7fd53U, 0x12866f2dU, 0xf8a8af5eU, 0x5de93d20U, 0x29195949U, 0x8c58cb37U, 0x66760b44U, 0xc337993aU,
        0x8f96c396U, 0x2ad751e8U, 0xc0f9919bU, 0x65b803e5U, 0x1148678cU, 0xb409f5f2U, 0x5e273581U, 0xfb66a7ffU,
        0x26217bcdU, 0x8360e9b3U, 0x694e29c0U, 0xcc0fbbbeU, 0xb8ffdfd7U, 0x1dbe4da9U, 0xf7908ddaU, 0x52d11fa4U,
        0x1e704508U, 0xbb31d776U, 0x511f1705U, 0xf45e857bU, 0x80aee112U, 0x25ef736cU, 0xcfc1b31fU, 0x6a802161U,
        0x56830647U, 0xf3c29439U, 0x19ec544aU, 0xbcadc634U, 0xc85da25dU, 0x6d1c3023U, 0x8732f050U, 0x2273622eU,
        0x6ed23882U, 0xcb93aafcU, 0x21bd6a8fU, 0x84fcf8f1U, 0xf00c9c98U, 0x554d0ee6U, 0xbf63ce95U, 0x1a225cebU,
        0x8b277743U, 0x2e66e53dU, 0xc448254eU, 0x6109b730U, 0x15f9d359U, 0xb0b84127U, 0x5a968154U, 0xffd7132aU,
        0xb3764986U, 0x1637dbf8U, 0xfc191b8bU, 0x595889f5U, 0x2da8ed9cU, 0x88e97fe2U, 0x62c7bf91U, 0xc7862defU,
        0xfb850ac9U, 0x5ec498b7U, 0xb4ea58c4U, 0x11abcabaU, 0x655baed3U, 0xc01a3cadU, 0x2a34fcdeU, 0x8f756ea0U,
        0xc3d4340cU, 0x6695a672U, 0x8cbb6601U, 0x29faf47fU, 0x5d0a9016U, 0xf84b0268U, 0x1265c21bU, 0xb7245065U,
        0x6a638c57U, 0xcf221e29U, 0x250cde5aU, 0x804d4c24U, 0xf4bd284dU, 0x51fcba33U, 0xbbd27a40U, 0x1e93e83eU,
        0x5232b292U, 0xf77320ecU, 0x1d5de09fU, 0xb81c72e1U, 0xccec1688U, 0x69ad84f6U, 0x83834485U, 0x26c2d6fbU,
        0x1ac1f1ddU, 0xbf8063a3U, 0x55aea3d0U, 0xf0ef31aeU, 0x841f55c7U, 0x215ec7b9U, 0xcb7007caU, 0x6e3195b4U,
        0x2290cf18U, 0x87d15d66U, 0x6dff9d15U, 0xc8be0f6bU, 0xbc4e6b02U, 0x190ff97cU, 0xf321390fU, 0x5660ab71U,
        0x4c42f79aU, 0xe90365e4U, 0x032da597U, 0xa66c37e9U, 0xd29c5380U, 0x77ddc1feU, 0x9df3018dU, 0x38b293f3U,
        0x7413c95fU, 0xd1525b21U, 0x3b7c9b52U, 0x9e3d092cU, 0xeacd6d45U, 0x4f8cff3bU, 0xa5a23f48U, 0x00e3ad36U,
        0x3ce08a10U, 0x99a1186eU, 0x738fd81dU, 0xd6ce4a63U, 0xa23e2e0aU, 0x077fbc74U, 0xed517c07U, 0x4810ee79U,
        0x04b1b4d5U, 0xa1f026abU, 0x4bdee6d8U, 0xee9f74a6U, 0x9a6f10cfU, 0x3f2e82b1U, 0xd50042c2U, 0x7041d0bcU,
        0xad060c8eU, 0x08479ef0U, 0xe2695e83U, 0x4728ccfdU, 0x33d8a894U, 0x96993aeaU, 0x7cb7fa99U, 0xd9f668e7U,
        0x9557324bU, 0x3016a035U, 0xda386046U, 0x7f79f238U, 0x0b899651U, 0xaec8042fU, 0x44e6c45cU, 0xe1a75622U,
        0xdda47104U, 0x78e5e37aU, 0x92cb2309U, 0x378ab177U, 0x437ad51eU, 0xe63b4760U, 0x0c158713U, 0xa954156dU,
        0xe5f54fc1U, 0x40b4ddbfU, 0xaa9a1dccU, 0x0fdb8fb2U, 0x7b2bebdbU, 0xde6a79a5U, 0x3444b9d6U, 0x91052ba8U,
    },
    {
        0x00000000U, 0xdd45aab8U, 0xbf672381U, 0x62228939U, 0x7b2231f3U, 0xa6679b4bU, 0xc4451272U, 0x1900b8caU,
        0xf64463e6U, 0x2b01c95eU, 0x49234067U, 0x9466eadfU, 0x8d665215U, 0x5023f8adU, 0x32017194U, 0xef44db2cU,
        0xe964b13dU, 0x34211b85U, 0x560392bcU, 0x8b463804U, 0x924680ceU, 0x4f032a76U, 0x2d21a34fU, 0xf06409f7U,
        0x1f20d2dbU, 0xc2657863U, 0xa047f15aU, 0x7d025be2U, 0x6402e328U, 0xb9474990U, 0xdb65c0a9U, 0x06206a11U,
        0xd725148bU, 0x0a60be33U, 0x6842370aU, 0xb5079db2U, 0xac072578U, 0x71428fc0U, 0x136006f9U, 0xce25ac41U,
        0x2161776dU, 0xfc24ddd5U, 0x9e0654ecU, 0x4343fe54U, 0x5a43469eU, 0x8706ec26U, 0xe524651fU, 0x3861cfa7U,
        0x3e41a5b6U, 0xe3040f0eU, 0x81268637U, 0x5c632c8fU, 0x45639445U, 0x98263efdU, 0xfa04b7c4U, 0x27411d7cU,
        0xc805c650U, 0x15406ce8U, 0x7762e5d1U, 0xaa274f69U, 0xb327f7a3U, 0x6e625d1bU, 0x0c40d422U, 0xd1057e9aU,
        0xaba65fe7U, 0x76e3f55fU, 0x14c17c66U, 0xc984d6deU, 0xd0846e14U, 0x0dc1c4acU, 0x6fe34d95U, 0xb2a6e72dU,
        0x5de23c01U, 0x80a796b9U, 0xe2851f80U, 0x3fc0b538U, 0x26c00df2U, 0xfb85a74aU, 0x99a72e73U, 0x44e284cbU,
        0x42c2eedaU, 0x9f874462U, 0xfda5cd5bU, 0x20e067e3U, 0x39e0df29U, 0xe4a57591U, 0x8687fca8U, 0x5bc25610U,
        0xb4868d3cU, 0x69c32784U, 0x0be1aebdU, 0xd6a40405U, 0xcfa4bccfU, 0x12e11677U, 0x70c39f4eU, 0xad8635f6U,
        0x7c834b6cU, 0xa1c6e1d4U, 0xc3e468edU, 0x1ea1c255U, 0x07a17a9fU, 0xdae4d027U, 0xb8c6591eU, 0x6583f3a6U,
        0x8ac7288aU, 0x57828232U, 0x35a00b0bU, 0xe8e5a1b3U, 0xf1e51979U, 0x2ca0b3c1U, 0x4e823af8U, 0x93c79040U,
        0x95e7fa51U, 0x48a250e9U, 0x2a80d9d0U, 0xf7c57368U, 0xeec5cba2U, 0x3380611aU, 0x51a2e823U, 0x8ce7429bU,
        0x63a399b7U, 0xbee6330fU, 0xdcc4ba36U, 0x0181108eU, 0x1881a844U, 0xc5c402fcU, 0xa7e68bc5U, 0x7aa3217dU,
        0x52a0c93fU, 0x8fe56387U, 0xedc7eabeU, 0x30824006U, 0x2982f8ccU, 0xf4c75274U, 0x96e5db4dU, 0x4ba071f5U,
        0xa4e4aad9U, 0x79a10061U, 0x1b838958U, 0xc6c623e0U, 0xdfc69b2aU, 0x02833192U, 0x60a1b8abU, 0xbde41213U,
        0xbbc47802U, 0x6681d2baU, 0x04a35b83U, 0xd9e6f13bU, 0xc0e649f1U, 0x1da3e349U, 0x7f816a70U, 0xa2c4c0c8U,
        0x4d801be4U, 0x90c5b15cU, 0xf2e73865U, 0x2fa292ddU, 0x36a22a17U, 0xebe780afU, 0x89c50996U, 0x5480a32eU,
        0x8585ddb4U, 0x58c0770cU, 0x3ae2fe35U, 0xe7a7548dU, 0xfea7ec47U, 0x23e246ffU, 0x41c0cfc6U, 0x9c85657eU,
        0x73c1be52U, 0xae8414eaU, 0xcca69dd3U, 0x11e3376bU, 0x08e38fa1U, 0xd5a62519U, 0xb784ac20U, 0x6ac10698U,
        0x6ce16c89U, 0xb1a4c631U, 0xd3864f08U, 0x0ec3e5b0U, 0x17c35d7aU, 0xca86f7c2U, 0xa8a47efbU, 0x75e1d443U,
        0x9aa50f6fU, 0x47e0a5d7U, 0x25c22ceeU, 0xf8878656U, 0xe1873e9cU, 0x3cc29424U, 0x5ee01d1dU, 0x83a5b7a5U,
        0xf90696d8U, 0x24433c60U, 0x4661b559U, 0x9b241fe1U, 0x8224a72bU, 0x5f610d93U, 0x3d4384aaU, 0xe0062e12U,
        0x0f42f53eU, 0xd2075f86U, 0xb025d6bfU, 0x6d607c07U, 0x7460c4cdU, 0xa9256e75U, 0xcb07e74cU, 0x16424df4U,
        0x106227e5U, 0xcd278d5dU, 0xaf050464U, 0x7240aedcU, 0x6b401616U, 0xb605bcaeU, 0xd4273597U, 0x09629f2fU,
        0xe6264403U, 0x3b63eebbU, 0x59416782U, 0x8404cd3aU, 0x9d0475f0U, 0x4041df48U, 0x22635671U, 0xff26fcc9U,
        0x2e238253U, 0xf36628ebU, 0x9144a1d2U, 0x4c010b6aU, 0x5501b3a0U, 0x88441918U, 0xea669021U, 0x37233a99U,
        0xd867e1b5U, 0x05224b0dU, 0x6700c234U, 0xba45688cU, 0xa345d046U, 0x7e007afeU, 0x1c22f3c7U, 0xc167597fU,
        0xc747336eU, 0x1a0299d6U, 0x782010efU, 0xa565ba57U, 0xbc65029dU, 0x6120a825U, 0x0302211cU, 0xde478ba4U,
        0x31035088U, 0xec46fa30U, 0x8e647309U, 0x5321d9b1U, 0x4a21617bU, 0x9764cbc3U, 0xf54642faU, 0x2803e842U,
    },
    {
        0x00000000U, 0x38116facU, 0x7022df58U, 0x4833b0f4U, 0xe045beb0U, 0xd854d11cU, 0x906761e8U, 0xa8760e44U,
        0xc5670b91U, 0xfd76643dU, 0xb545d4c9U, 0x8d54bb65U, 0x2522b521U, 0x1d33da8dU, 0x55006a79U, 0x6d1105d5U,
        0x8f2261d3U, 0xb7330e7fU, 0xff00be8bU, 0xc711d127U, 0x6f67df63U, 0x5776b0cfU, 0x1f45003bU, 0x27546f97U,
        0x4a456a42U, 0x725405eeU, 0x3a67b51aU, 0x0276dab6U, 0xaa00d4f2U, 0x9211bb5eU, 0xda220baaU, 0xe2336406U,
        0x1ba8b557U, 0x23b9dafbU, 0x6b8a6a0fU, 0x539b05a3U, 0xfbed0be7U, 0xc3fc644bU, 0x8bcfd4bfU, 0xb3debb13U,
        0xdecfbec6U, 0xe6ded16aU, 0xaeed619eU, 0x96fc0e32U, 0x3e8a0076U, 0x069b6fdaU, 0x4ea8df2eU, 0x76b9b082U,
        0x948ad484U, 0xac9bbb28U, 0xe4a80bdcU, 0xdcb96470U, 0x74cf6a34U, 0x4cde0598U, 0x04edb56cU, 0x3cfcdac0U,
        0x51eddf15U, 0x69fcb0b9U, 0x21cf004dU, 0x19de6fe1U, 0xb1a861a5U, 0x89b90e09U, 0xc18abefdU, 0xf99bd151U,
        0x37516aaeU, 0x0f400502U, 0x4773b5f6U, 0x7f62da5aU, 0xd714d41eU, 0xef05bbb2U, 0xa7360b46U, 0x9f2764eaU,
        0xf236613fU, 0xca270e93U, 0x8214be67U, 0xba05d1cbU, 0x1273df8fU, 0x2a62b023U, 0x625100d7U, 0x5a406f7bU,
        0xb8730b7dU, 0x806264d1U, 0xc851d425U, 0xf040bb89U, 0x5836b5cdU, 0x6027da61U, 0x28146a95U, 0x10050539U,
        0x7d1400ecU, 0x45056f40U, 0x0d36dfb4U, 0x3527b018U, 0x9d51be5cU, 0xa540d1f0U, 0xed736104U, 0xd5620ea8U,
        0x2cf9dff9U, 0x14e8b055U, 0x5cdb00a1U, 0x64ca6f0dU, 0xccbc6149U, 0xf4ad0ee5U, 0xbc9ebe11U, 0x848fd1bdU,
        0xe99ed468U, 0xd18fbbc4U, 0x99bc0b30U, 0xa1ad649cU, 0x09db6ad8U, 0x31ca0574U, 0x79f9b580U, 0x41e8da2cU,
        0xa3dbbe2aU, 0x9bcad186U, 0xd3f96172U, 0xebe80edeU, 0x439e009aU, 0x7b8f6f36U, 0x33bcdfc2U, 0x0badb06eU,
        0x66bcb5bbU, 0x5eadda17U, 0x169e6ae3U, 0x2e8f054fU, 0x86f90b0bU, 0xbee864a7U, 0xf6dbd453U, 0xcecabbffU,
        0x6ea2d55cU, 0x56b3baf0U, 0x1e800a04U, 0x269165a8U, 0x8ee76becU, 0xb6f60440U, 0xfec5b4b4U, 0xc6d4db18U,
        0xabc5decdU, 0x93d4b161U, 0xdbe70195U, 0xe3f66e39U, 0x4b80607dU, 0x73910fd1U, 0x3ba2bf25U, 0x03b3d089U,
        0xe180b48fU, 0xd991db23U, 0x91a26bd7U, 0xa9b3047bU, 0x01c50a3fU, 0x39d46593U, 0x71e7d567U, 0x49f6bacbU,
        0x24e7bf1eU, 0x1cf6d0b2U, 0x54c56046U, 0x6cd40feaU, 0xc4a201aeU, 0xfcb36e02U, 0xb480def6U, 0x8c91b15aU,
        0x750a600bU, 0x4d1b0fa7U, 0x0528bf53U, 0x3d39d0ffU, 0x954fdebbU, 0xad5eb117U, 0xe56d01e3U, 0xdd7c6e4fU,
        0xb06d6b9aU, 0x887c0436U, 0xc04fb4c2U, 0xf85edb6eU, 0x5028d52aU, 0x6839ba86U, 0x200a0a72U, 0x181b65deU,
        0xfa2801d8U, 0xc2396e74U, 0x8a0ade80U, 0xb21bb12cU, 0x1a6dbf68U, 0x227cd0c4U, 0x6a4f6030U, 0x525e0f9cU,
        0x3f4f0a49U, 0x075e65e5U, 0x4f6dd511U, 0x777cbabdU, 0xdf0ab4f9U, 0xe71bdb55U, 0xaf286ba1U, 0x9739040dU,
        0x59f3bff2U, 0x61e2d05eU, 0x29d160aaU, 0x11c00f06U, 0xb9b60142U, 0x81a76eeeU, 0xc994de1aU, 0xf185b1b6U,
        0x9c94b463U, 0xa485dbcfU, 0xecb66b3bU, 0xd4a70497U, 0x7cd10ad3U, 0x44c0657fU, 0x0cf3d58bU, 0x34e2ba27U,
        0xd6d1de21U, 0xeec0b18dU, 0xa6f30179U, 0x9ee26ed5U, 0x36946091U, 0x0e850f3dU, 0x46b6bfc9U, 0x7ea7d065U,
        0x13b6d5b0U, 0x2ba7ba1cU, 0x63940ae8U, 0x5b856544U, 0xf3f36b00U, 0xcbe204acU, 0x83d1b458U, 0xbbc0dbf4U,
        0x425b0aa5U, 0x7a4a6509U, 0x3279d5fdU, 0x0a68ba51U, 0xa21eb415U, 0x9a0fdbb9U, 0xd23c6b4dU, 0xea2d04e1U,
        0x873c0134U, 0xbf2d6e98U, 0xf71ede6cU, 0xcf0fb1c0U, 0x6779bf84U, 0x5f68d028U, 0x175b60dcU, 0x2f4a0f70U,
        0xcd796b76U, 0xf56804daU, 0xbd5bb42eU, 0x854adb82U, 0x2d3cd5c6U, 0x152dba6aU, 0x5d1e0a9eU, 0x650f6532U,
        0x081e60e7U, 0x300f0f4bU, 0x783cbfbfU, 0x402dd013U, 0xe85bde57U, 0xd04ab1fbU, 0x9879010fU, 0xa0686ea3U,
    },
    {
        0x00000000U, 0xef306b19U, 0xdb8ca0c3U, 0x34bccbdaU, 0xb2f53777U, 0x5dc55c6eU, 0x697997b4U, 0x8649fcadU,
        0x6006181fU, 0x8f367306U, 0xbb8ab8dcU, 0x54bad3c5U, 0xd2f32f68U, 0x3dc34471U, 0x097f8fabU, 0xe64fe4b2U,
        0xc00c303eU, 0x2f3c5b27U, 0x1b8090fdU, 0xf4b0fbe4U, 0x72f90749U, 0x9dc96c50U, 0xa975a78aU, 0x4645cc93U,
        0xa00a2821U, 0x4f3a4338U, 0x7b8688e2U, 0x94b6e3fbU, 0x12ff1f56U, 0xfdcf744fU, 0xc973bf95U, 0x2643d48cU,
        0x85f4168dU, 0x6ac47d94U, 0x5e78b64eU, 0xb148dd57U, 0x370121faU, 0xd8314ae3U, 0xec8d8139U, 0x03bdea20U,
        0xe5f20e92U, 0x0ac2658bU, 0x3e7eae51U, 0xd14ec548U, 0x570739e5U, 0xb83752fcU, 0x8c8b9926U, 0x63bbf23fU,
        0x45f826b3U, 0xaac84daaU, 0x9e748670U, 0x7144ed69U, 0xf70d11c4U, 0x183d7addU, 0x2c81b107U, 0xc3b1da1eU,
        0x25fe3eacU, 0xcace55b5U, 0xfe729e6fU, 0x1142f576U, 0x970b09dbU, 0x783b62c2U, 0x4c87a918U, 0xa3b7c201U,
        0x0e045bebU, 0xe13430f2U, 0xd588fb28U, 0x3ab89031U, 0xbcf16c9cU, 0x53c10785U, 0x677dcc5fU, 0x884da746U,
        0x6e0243f4U, 0x813228edU, 0xb58ee337U, 0x5abe882eU, 0xdcf77483U, 0x33c71f9aU, 0x077bd440U, 0xe84bbf59U,
        0xce086bd5U, 0x213800ccU, 0x1584cb16U, 0xfab4a00fU, 0x7cfd5ca2U, 0x93cd37bbU, 0xa771fc61U, 0x48419778U,
        0xae0e73caU, 0x413e18d3U, 0x7582d309U, 0x9ab2b810U, 0x1cfb44bdU, 0xf3cb2fa4U, 0xc777e47eU, 0x28478f67U,
        0x8bf04d66U, 0x64c0267fU, 0x507ceda5U, 0xbf4c86bcU, 0x39057a11U, 0xd6351108U, 0xe289dad2U, 0x0db9b1cbU,
        0xebf65579U, 0x04c63e60U, 0x307af5baU, 0xdf4a9ea3U, 0x5903620eU, 0xb6330917U, 0x828fc2cdU, 0x6dbfa9d4U,
        0x4bfc7d58U, 0xa4cc1641U, 0x9070dd9bU, 0x7f40b682U, 0xf9094a2fU, 0x16392136U, 0x2285eaecU, 0xcdb581f5U,
        0x2bfa6547U, 0xc4ca0e5eU, 0xf076c584U, 0x1f46ae9dU, 0x990f5230U, 0x763f3929U, 0x4283f2f3U, 0xadb399eaU,
        0x1c08b7d6U, 0xf338dccfU, 0xc7841715U, 0x28b47c0cU, 0xaefd80a1U, 0x41cdebb8U, 0x75712062U, 0x9a414b7bU,
        0x7c0eafc9U, 0x933ec4d0U, 0xa7820f0aU, 0x48b26413U, 0xcefb98beU, 0x21cbf3a7U, 0x1577387dU, 0xfa475364U,
        0xdc0487e8U, 0x3334ecf1U, 0x0788272bU, 0xe8b84c32U, 0x6ef1b09fU, 0x81c1db86U, 0xb57d105cU, 0x5a4d7b45U,
        0xbc029ff7U, 0x5332f4eeU, 0x678e3f34U, 0x88be542dU, 0x0ef7a880U, 0xe1c7c399U, 0xd57b0843U, 0x3a4b635aU,
        0x99fca15bU, 0x76ccca42U, 0x42700198U, 0xad406a81U, 0x2b09962cU, 0xc439fd35U, 0xf08536efU, 0x1fb55df6U,
        0xf9fab944U, 0x16cad25dU, 0x22761987U, 0xcd46729eU, 0x4b0f8e33U, 0xa43fe52aU, 0x90832ef0U, 0x7fb345e9U,
        0x59f09165U, 0xb6c0fa7cU, 0x827c31a6U, 0x6d4c5abfU, 0xeb05a612U, 0x0435cd0bU, 0x308906d1U, 0xdfb96dc8U,
        0x39f6897aU, 0xd6c6e263U, 0xe27a29b9U, 0x0d4a42a0U, 0x8b03be0dU, 0x6433d514U, 0x508f1eceU, 0xbfbf75d7U,
        0x120cec3dU, 0xfd3c8724U, 0xc9804cfeU, 0x26b027e7U, 0xa0f9db4aU, 0x4fc9b053U, 0x7b757b89U, 0x94451090U,
        0x720af422U, 0x9d3a9f3bU, 0xa98654e1U, 0x46b63ff8U, 0xc0ffc355U, 0x2fcfa84cU, 0x1b736396U, 0xf443088fU,
        0xd200dc03U, 0x3d30b71aU, 0x098c7cc0U, 0xe6bc17d9U, 0x60f5eb74U, 0x8fc5806dU, 0xbb794bb7U, 0x544920aeU,
        0xb206c41cU, 0x5d36af05U, 0x698a64dfU, 0x86ba0fc6U, 0x00f3f36bU, 0xefc39872U, 0xdb7f53a8U, 0x344f38b1U,
        0x97f8fab0U, 0x78c891a9U, 0x4c745a73U, 0xa344316aU, 0x250dcdc7U, 0xca3da6deU, 0xfe816d04U, 0x11b1061dU,
        0xf7fee2afU, 0x18ce89b6U, 0x2c72426cU, 0xc3422975U, 0x450bd5d8U, 0xaa3bbec1U, 0x9e87751bU, 0x71b71e02U,
        0x57f4ca8eU, 0xb8c4a197U, 0x8c786a4dU, 0x63480154U, 0xe501fdf9U, 0x0a3196e0U, 0x3e8d5d3aU, 0xd1bd3623U,
        0x37f2d291U, 0xd8c2b988U, 0xec7e7252U, 0x034e194bU, 0x8507e5e6U, 0x6a378effU, 0x5e8b4525U, 0xb1bb2e3cU,
    },
    {
        0x00000000U, 0x68032cc8U, 0xd0065990U, 0xb8057558U, 0xa5e0c5d1U, 0xcde3e919U, 0x75e69c41U, 0x1de5b089U,
        0x4e2dfd53U, 0x262ed19bU, 0x9e2ba4c3U, 0xf628880bU, 0xebcd3882U, 0x83ce144aU, 0x3bcb6112U, 0x53c84ddaU,
        0x9c5bfaa6U, 0xf458d66eU, 0x4c5da336U, 0x245e8ffeU, 0x39bb3f77U, 0x51b813bfU, 0xe9bd66e7U, 0x81be4a2fU,
        0xd27607f5U, 0xba752b3dU, 0x02705e65U, 0x6a7372adU, 0x7796c224U, 0x1f95eeecU, 0xa7909bb4U, 0xcf93b77cU,
        0x3d5b83bdU, 0x5558af75U, 0xed5dda2dU, 0x855ef6e5U, 0x98bb466cU, 0xf0b86aa4U, 0x48bd1ffcU, 0x20be3334U,
        0x73767eeeU, 0x1b755226U, 0xa370277eU, 0xcb730bb6U, 0xd696bb3fU, 0xbe9597f7U, 0x0690e2afU, 0x6e93ce67U,
        0xa100791bU, 0xc90355d3U, 0x7106208bU, 0x19050c43U, 0x04e0bccaU, 0x6ce39002U, 0xd4e6e55aU, 0xbce5c992U,
        0xef2d8448U, 0x872ea880U, 0x3f2bddd8U, 0x5728f110U, 0x4acd4199U, 0x22ce6d51U, 0x9acb1809U, 0xf2c834c1U,
        0x7ab7077aU, 0x12b42bb2U, 0xaab15eeaU, 0xc2b27222U, 0xdf57c2abU, 0xb754ee63U, 0x0f519b3bU, 0x6752b7f3U,
        0x349afa29U, 0x5c99d6e1U, 0xe49ca3b9U, 0x8c9f8f71U, 0x917a3ff8U, 0xf9791330U, 0x417c6668U, 0x297f4aa0U,
        0xe6ecfddcU, 0x8eefd114U, 0x36eaa44cU, 0x5ee98884U, 0x430c380dU, 0x2b0f14c5U, 0x930a619dU, 0xfb094d55U,
        0xa8c1008fU, 0xc0c22c47U, 0x78c7591fU, 0x10c475d7U, 0x0d21c55eU, 0x6522e996U, 0xdd279cceU, 0xb524b006U,
        0x47ec84c7U, 0x2fefa80fU, 0x97eadd57U, 0xffe9f19fU, 0xe20c4116U, 0x8a0f6ddeU, 0x320a1886U, 0x5a09344eU,
        0x09c17994U, 0x61c2555cU, 0xd9c72004U, 0xb1c40cccU, 0xac21bc45U, 0xc422908dU, 0x7c27e5d5U, 0x1424c91dU,
        0xdbb77e61U, 0xb3b452a9U, 0x0bb127f1U, 0x63b20b39U, 0x7e57bbb0U, 0x16549778U, 0xae51e220U, 0xc652cee8U,
        0x959a8332U, 0xfd99affaU, 0x459cdaa2U, 0x2d9ff66aU, 0x307a46e3U, 0x58796a2bU, 0xe07c1f73U, 0x887f33bbU,
        0xf56e0ef4U, 0x9d6d223cU, 0x25685764U, 0x4d6b7bacU, 0x508ecb25U, 0x388de7edU, 0x808892b5U, 0xe88bbe7dU,
        0xbb43f3a7U, 0xd340df6fU, 0x6b45aa37U, 0x034686ffU, 0x1ea33676U, 0x76a01abeU, 0xcea56fe6U, 0xa6a6432eU,
        0x6935f452U, 0x0136d89aU, 0xb933adc2U, 0xd130810aU, 0xccd53183U, 0xa4d61d4bU, 0x1cd36813U, 0x74d044dbU,
        0x27180901U, 0x4f1b25c9U, 0xf71e5091U, 0x9f1d7c59U, 0x82f8ccd0U, 0xeafbe018U, 0x52fe9540U, 0x3afdb988U,
        0xc8358d49U, 0xa036a181U, 0x1833d4d9U, 0x7030f811U, 0x6dd54898U, 0x05d66450U, 0xbdd31108U, 0xd5d03dc0U,
        0x8618701aU, 0xee1b5cd2U, 0x561e298aU, 0x3e1d0542U, 0x23f8b5cbU, 0x4bfb9903U, 0xf3feec5bU, 0x9bfdc093U,
        0x546e77efU, 0x3c6d5b27U, 0x84682e7fU, 0xec6b02b7U, 0xf18eb23eU, 0x998d9ef6U, 0x2188ebaeU, 0x498bc766U,
        0x1a438abcU, 0x7240a674U, 0xca45d32cU, 0xa246ffe4U, 0xbfa34f6dU, 0xd7a063a5U, 0x6fa516fdU, 0x07a63a35U,
        0x8fd9098eU, 0xe7da2546U, 0x5fdf501eU, 0x37dc7cd6U, 0x2a39cc5fU, 0x423ae097U, 0xfa3f95cfU, 0x923cb907U,
        0xc1f4f4ddU, 0xa9f7d815U, 0x11f2ad4dU, 0x79f18185U, 0x6414310cU, 0x0c171dc4U, 0xb412689cU, 0xdc114454U,
        0x1382f328U, 0x7b81dfe0U, 0xc384aab8U, 0xab878670U, 0xb66236f9U, 0xde611a31U, 0x66646f69U, 0x0e6743a1U,
        0x5daf0e7bU, 0x35ac22b3U, 0x8da957ebU, 0xe5aa7b23U, 0xf84fcbaaU, 0x904ce762U, 0x2849923aU, 0x404abef2U,
        0xb2828a33U, 0xda81a6fbU, 0x6284d3a3U, 0x0a87ff6bU, 0x17624fe2U, 0x7f61632aU, 0xc7641672U, 0xaf673abaU,
        0xfcaf7760U, 0x94ac5ba8U, 0x2ca92ef0U, 0x44aa0238U, 0x594fb2b1U, 0x314c9e79U, 0x8949eb21U, 0xe14ac7e9U,
        0x2ed97095U, 0x46da5c5dU, 0xfedf2905U, 0x96dc05cdU, 0x8b39b544U, 0xe33a998cU, 0x5b3fecd4U, 0x333cc01cU,
        0x60f48dc6U, 0x08f7a10eU, 0xb0f2d456U, 0xd8f1f89eU, 0xc5144817U, 0xad1764dfU, 0x15121187U, 0x7d113d4fU,
    },
    {
        0x00000000U, 0x493c7d27U, 0x9278fa4eU, 0xdb448769U, 0x211d826dU, 0x6821ff4aU, 0xb3657823U, 0xfa590504U,
        0x423b04daU, 0x0b0779fdU, 0xd043fe94U, 0x997f83b3U, 0x632686b7U, 0x2a1afb90U, 0xf15e7cf9U, 0xb86201deU,
        0x847609b4U, 0xcd4a7493U, 0x160ef3faU, 0x5f328eddU, 0xa56b8bd9U, 0xec57f6feU, 0x37137197U, 0x7e2f0cb0U,
        0xc64d0d6eU, 0x8f717049U, 0x5435f720U, 0x1d098a07U, 0xe7508f03U, 0xae6cf224U, 0x7528754dU, 0x3c14086aU,
        0x0d006599U, 0x443c18beU, 0x9f789fd7U, 0xd644e2f0U, 0x2c1de7f4U, 0x65219ad3U, 0xbe651dbaU, 0xf759609dU,
        0x4f3b6143U, 0x06071c64U, 0xdd439b0dU, 0x947fe62aU, 0x6e26e32eU, 0x271a9e09U, 0xfc5e1960U, 0xb5626447U,
        0x89766c2dU, 0xc04a110aU, 0x1b0e9663U, 0x5232eb44U, 0xa86bee40U, 0xe1579367U, 0x3a13140eU, 0x732f6929U,
        0xcb4d68f7U, 0x827115d0U, 0x593592b9U, 0x1009ef9eU, 0xea50ea9aU, 0xa36c97bdU, 0x782810d4U, 0x31146df3U,
        0x1a00cb32U, 0x533cb615U, 0x8878317cU, 0xc1444c5bU, 0x3b1d495fU, 0x72213478U, 0xa965b311U, 0xe059ce36U,
        0x583bcfe8U, 0x1107b2cfU, 0xca4335a6U, 0x837f4881U, 0x79264d85U, 0x301a30a2U, 0xeb5eb7cbU, 0xa262caecU,
        0x9e76c286U, 0xd74abfa1U, 0x0c0e38c8U, 0x453245efU, 0xbf6b40ebU, 0xf6573dccU, 0x2d13baa5U, 0x642fc782U,
        0xdc4dc65cU, 0x9571bb7bU, 0x4e353c12U, 0x07094135U, 0xfd504431U, 0xb46c3916U, 0x6f28be7fU, 0x2614c358U,
        0x1700aeabU, 0x5e3cd38cU, 0x857854e5U, 0xcc4429c2U, 0x361d2cc6U, 0x7f2151e1U, 0xa465d688U, 0xed59abafU,
        0x553baa71U, 0x1c07d756U, 0xc743503fU, 0x8e7f2d18U, 0x7426281cU, 0x3d1a553bU, 0xe65ed252U, 0xaf62af75U,
        0x9376a71fU, 0xda4ada38U, 0x010e5d51U, 0x48322076U, 0xb26b2572U, 0xfb575855U, 0x2013df3cU, 0x692fa21bU,
        0xd14da3c5U, 0x9871dee2U, 0x4335598bU, 0x0a0924acU, 0xf05021a8U, 0xb96c5c8fU, 0x6228dbe6U, 0x2b14a6c1U,
        0x34019664U, 0x7d3deb43U, 0xa6796c2aU, 0xef45110dU, 0x151c1409U, 0x5c20692eU, 0x8764ee47U, 0xce589360U,
        0x763a92beU, 0x3f06ef99U, 0xe44268f0U, 0xad7e15d7U, 0x572710d3U, 0x1e1b6df4U, 0xc55fea9dU, 0x8c6397baU,
        0xb0779fd0U, 0xf94be2f7U, 0x220f659eU, 0x6b3318b9U, 0x916a1dbdU, 0xd856609aU, 0x0312e7f3U, 0x4a2e9ad4U,
        0xf24c9b0aU, 0xbb70e62dU, 0x60346144U, 0x29081c63U, 0xd3511967U, 0x9a6d6440U, 0x4129e329U, 0x08159e0eU,
        0x3901f3fdU, 0x703d8edaU, 0xab7909b3U, 0xe2457494U, 0x181c7190U, 0x51200cb7U, 0x8a648bdeU, 0xc358f6f9U,
        0x7b3af727U, 0x32068a00U, 0xe9420d69U, 0xa07e704eU, 0x5a27754aU, 0x131b086dU, 0xc85f8f04U, 0x8163f223U,
        0xbd77fa49U, 0xf44b876eU, 0x2f0f0007U, 0x66337d20U, 0x9c6a7824U, 0xd5560503U, 0x0e12826aU, 0x472eff4dU,
        0xff4cfe93U, 0xb67083b4U, 0x6d3404ddU, 0x240879faU, 0xde517cfeU, 0x976d01d9U, 0x4c2986b0U, 0x0515fb97U,
        0x2e015d56U, 0x673d2071U, 0xbc79a718U, 0xf545da3fU, 0x0f1cdf3bU, 0x4620a21cU, 0x9d642575U, 0xd4585852U,
        0x6c3a598cU, 0x250624abU, 0xfe42a3c2U, 0xb77edee5U, 0x4d27dbe1U, 0x041ba6c6U, 0xdf5f21afU, 0x96635c88U,
        0xaa7754e2U, 0xe34b29c5U, 0x380faeacU, 0x7133d38bU, 0x8b6ad68fU, 0xc256aba8U, 0x19122cc1U, 0x502e51e6U,
        0xe84c5038U, 0xa1702d1fU, 0x7a34aa76U, 0x3308d751U, 0xc951d255U, 0x806daf72U, 0x5b29281bU, 0x1215553cU,
        0x230138cfU, 0x6a3d45e8U, 0xb179c281U, 0xf845bfa6U, 0x021cbaa2U, 0x4b20c785U, 0x906440ecU, 0xd9583dcbU,
        0x613a3c15U, 0x28064132U, 0xf342c65bU, 0xba7ebb7cU, 0x4027be78U, 0x091bc35fU, 0xd25f4436U, 0x9b633911U,
        0xa777317bU, 0xee4b4c5cU, 0x350fcb35U, 0x7c33b612U, 0x866ab316U, 0xcf56ce31U, 0x14124958U, 0x5d2e347fU,
        0xe54c35a1U, 0xac704886U, 0x7734cfefU, 0x3e08b2c8U, 0xc451b7ccU, 0x8d6dcaebU, 0x56294d82U, 0x1f1530a5U,
    },
};

static uint32_t crc32c_portable(uint32_t crc, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
    n--;
  }
  while (n >= 8) {
    /* Byte loads keep this independent of endianness and alignment rules;
     * compilers fuse them into one load on little-endian targets. */
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^ crc32c_table[5][(lo >> 16) & 0xff] ^
          crc32c_table[4][lo >> 24] ^ crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
          crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
  return crc;
}

/* crc32c_portable with a copy: each group of 8 bytes is stored to dst as
 * it is folded in. */
static uint32_t crc32c_copy_portable(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p) & 0xff];
    *d++ = *p++;
    n--;
  }
  while (n >= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    memcpy(d, p, 8);
    crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^ crc32c_table[5][(lo >> 16) & 0xff] ^
          crc32c_table[4][lo >> 24] ^ crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
          crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
    p += 8;
    d += 8;
    n -= 8;
  }
  while (n-- > 0) {
    crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p) & 0xff];
    *d++ = *p++;
  }
  return crc;
}

#ifdef CRC32C_HAVE_SSE42
/* One dependent chain of crc32q: 8 bytes per instruction latency (3
 * cycles). Used for short inputs, for the tail after the three-stream
 * blocks and on SSE4.2 CPUs without PCLMULQDQ. */
__attribute__((target("sse4.2"))) static uint64_t crc32c_sse42_chain(uint64_t c, const unsigned char *p, size_t n) {
  while (n >= 32) {
    uint64_t w0, w1, w2, w3;
    memcpy(&w0, p, 8);
    memcpy(&w1, p + 8, 8);
    memcpy(&w2, p + 16, 8);
    memcpy(&w3, p + 24, 8);
    c = _mm_crc32_u64(c, w0);
    c = _mm_crc32_u64(c, w1);
    c = _mm_crc32_u64(c, w2);
    c = _mm_crc32_u64(c, w3);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = _mm_crc32_u8((uint32_t)c, *p++);
  return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p++);
    n--;
  }
  return (uint32_t)crc32c_sse42_chain(c, p, n);
}

/*
 * Three streams over adjacent blocks keep the crc32 unit busy every cycle
 * instead of every third. The streams are then joined with
 *   crc(A B C) = crc(A) * x^(16L) + crc(B) * x^(8L) + crc(C)   (mod P)
 * for blocks of L bytes, B and C started from 0. In the reflected bit order
 * a carry-less product of two 32-bit values is the polynomial product times
 * x, and crc32q of a 64-bit value multiplies by x^32 and reduces, so
 * crc32q(0, clmul(a, x^(n-33) mod P)) is a * x^n mod P. The constants below
 * are x^(16L-33) and x^(8L-33) mod P for each block size (any of them can
 * be rebuilt by stepping x^0 = 0x80000000 through v = v >> 1 ^ (v & 1 ?
 * 0x82F63B78 : 0) n-33 times); tests that cross every block boundary
 * catch a wrong one.
 */
enum { CRC32C_LONG = 8192, CRC32C_SHORT = 256 };
#define CRC32C_LONG_K_A 0x1dc403ccU
#define CRC32C_LONG_K_B 0x54a86326U
#define CRC32C_SHORT_K_A 0xdd7e3b0cU
#define CRC32C_SHORT_K_B 0xb9e02b86U

/* Inlined with a constant block so each size gets its own unrolled loop. */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint64_t crc32c_three_blocks(
    uint64_t c0, const unsigned char *p, size_t block, uint32_t k_a, uint32_t k_b) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 8) {
    uint64_t w0, w1, w2;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + block + i, 8);
    memcpy(&w2, p + 2 * block + i, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  __m128i a = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c0), _mm_cvtsi32_si128((int)k_a), 0x00);
  __m128i b = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c1), _mm_cvtsi32_si128((int)k_b), 0x00);
  return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(a, b))) ^ c2;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_sse42_pclmul(uint32_t crc, const unsigned char *p,
                                                                             size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p++);
    n--;
  }
  while (n >= 3 * CRC32C_LONG) {
    c = crc32c_three_blocks(c, p, CRC32C_LONG, CRC32C_LONG_K_A, CRC32C_LONG_K_B);
    p += 3 * CRC32C_LONG;
    n -= 3 * CRC32C_LONG;
  }
  while (n >= 3 * CRC32C_SHORT) {
    c = crc32c_three_blocks(c, p, CRC32C_SHORT, CRC32C_SHORT_K_A, CRC32C_SHORT_K_B);
    p += 3 * CRC32C_SHORT;
    n -= 3 * CRC32C_SHORT;
  }
  return (uint32_t)crc32c_sse42_chain(c, p, n);
}

/* ---- fused copy ---- */

/* crc32c_sse42_chain with a copy. Each word is loaded once, folded in and
 * stored. */
__attribute__((target("sse4.2"))) static uint64_t crc32c_copy_sse42_chain(uint64_t c, unsigned char *d,
                                                                          const unsigned char *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    memcpy(d, &w, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    d += 8;
    n -= 8;
  }
  while (n-- > 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
  }
  return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_copy_sse42(uint32_t crc, unsigned char *d,
                                                                    const unsigned char *p, size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
    n--;
  }
  return (uint32_t)crc32c_copy_sse42_chain(c, d, p, n);
}

/* 64 bytes from s to d in four 16-byte moves (SSE2, baseline on x86-64). */
__attribute__((always_inline)) static inline void copy_line(unsigned char *d, const unsigned char *s) {
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
  __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
  __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
  _mm_storeu_si128((__m128i *)(void *)d, a);
  _mm_storeu_si128((__m128i *)(void *)(d + 16), b);
  _mm_storeu_si128((__m128i *)(void *)(d + 32), c);
  _mm_storeu_si128((__m128i *)(void *)(d + 48), e);
}

/*
 * crc32c_three_blocks with a copy, a line (64 bytes) of each stream at a
 * time: the line's words are folded in first, then the line is copied
 * (vector moves, from L1 by then). The loads of a line come before the
 * stores of that line: a load that follows a store to an address equal in
 * its low 12 bits waits on a false dependency (4K aliasing), and a source
 * and a destination that are both page-aligned are exactly that.
 */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint64_t crc32c_copy_three_blocks(
    uint64_t c0, unsigned char *d, const unsigned char *p, size_t block, uint32_t k_a, uint32_t k_b) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 64) {
    for (size_t k = 0; k < 64; k += 8) {
      uint64_t w0, w1, w2;
      memcpy(&w0, p + i + k, 8);
      memcpy(&w1, p + block + i + k, 8);
      memcpy(&w2, p + 2 * block + i + k, 8);
      c0 = _mm_crc32_u64(c0, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    copy_line(d + i, p + i);
    copy_line(d + block + i, p + block + i);
    copy_line(d + 2 * block + i, p + 2 * block + i);
  }
  __m128i a = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c0), _mm_cvtsi32_si128((int)k_a), 0x00);
  __m128i b = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c1), _mm_cvtsi32_si128((int)k_b), 0x00);
  return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(a, b))) ^ c2;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_copy_sse42_pclmul(uint32_t crc, unsigned char *d,
                                                                                  const unsigned char *p, size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
    n--;
  }
  while (n >= 3 * CRC32C_LONG) {
    c = crc32c_copy_three_blocks(c, d, p, CRC32C_LONG, CRC32C_LONG_K_A, CRC32C_LONG_K_B);
    p += 3 * CRC32C_LONG;
    d += 3 * CRC32C_LONG;
    n -= 3 * CRC32C_LONG;
  }
  while (n >= 3 * CRC32C_SHORT) {
    c = crc32c_copy_three_blocks(c, d, p, CRC32C_SHORT, CRC32C_SHORT_K_A, CRC32C_SHORT_K_B);
    p += 3 * CRC32C_SHORT;
    d += 3 * CRC32C_SHORT;
    n -= 3 * CRC32C_SHORT;
  }
  return (uint32_t)crc32c_copy_sse42_chain(c, d, p, n);
}

/*
 * The fused copy with AVX-512 and VPCLMULQDQ (a CPU that has both): the
 * message is folded 64 bytes per instruction instead of CRC'd 8 bytes per
 * crc32q, so a copy and its CRC cost about what the copy costs. Four
 * 64-byte accumulators each move 256 bytes forward per round:
 *   A(x) x^(8D) = lo(A) x^(64+8D) + hi(A) x^(8D)   (mod P)
 * where lo(A) holds the earlier, higher-degree half of a 16-byte lane in
 * the reflected order; a reflected carry-less product is the polynomial
 * product times x, and a 32-bit constant c stands for c(x) x^32, so the two
 * halves are multiplied by x^(8D+31) and x^(8D-33) mod P (the same
 * stepping as for the constants above; D = 16 and 64 give the published
 * CRC-32C folding constants f20c0dfe/493c7d27 and 740eef02/9e4addf8). The
 * CRC register is XORed into the first 4 bytes, the lanes are folded into
 * one 16-byte value congruent to the message, and two crc32q of it (from
 * 0) give the register; the tail goes through the crc32q chain. The plain
 * CRC (hk_crc32c_extend) uses the same folding, without the stores.
 */
#define FOLD_256_LO 0xdcb17aa4U
#define FOLD_256_HI 0xb9e02b86U
#define FOLD_64_LO 0x740eef02U
#define FOLD_64_HI 0x9e4addf8U
#define FOLD_48_LO 0x1c291d04U
#define FOLD_48_HI 0xddc0152bU
#define FOLD_32_LO 0x3da6d0cbU
#define FOLD_32_HI 0xba4fc28eU
#define FOLD_16_LO 0xf20c0dfeU
#define FOLD_16_HI 0x493c7d27U

#define VPCLMUL_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

VPCLMUL_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                   0x96);
}

VPCLMUL_TARGET static inline __m128i fold128(__m128i x, uint32_t lo, uint32_t hi) {
  __m128i k = _mm_set_epi64x((long long)hi, (long long)lo);
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* With `copy` (a constant at each call), every block is also stored to d. */
VPCLMUL_TARGET __attribute__((always_inline)) static inline uint32_t crc32c_fold_vpclmul(uint32_t crc, unsigned char *d,
                                                                                         const unsigned char *p,
                                                                                         size_t n, int copy) {
  __m512i x0, x1, x2, x3, k;
  __m128i a;
  uint64_t c;
  x0 = _mm512_loadu_si512((const void *)p);
  x1 = _mm512_loadu_si512((const void *)(p + 64));
  x2 = _mm512_loadu_si512((const void *)(p + 128));
  x3 = _mm512_loadu_si512((const void *)(p + 192));
  if (copy) {
    _mm512_storeu_si512((void *)d, x0);
    _mm512_storeu_si512((void *)(d + 64), x1);
    _mm512_storeu_si512((void *)(d + 128), x2);
    _mm512_storeu_si512((void *)(d + 192), x3);
    d += 256;
  }
  x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)crc), 0));
  p += 256, n -= 256;
  k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)FOLD_256_HI, (long long)FOLD_256_LO));
  while (n >= 256) {
    __m512i y0 = _mm512_loadu_si512((const void *)p), y1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i y2 = _mm512_loadu_si512((const void *)(p + 128)), y3 = _mm512_loadu_si512((const void *)(p + 192));
    if (copy) {
      _mm512_storeu_si512((void *)d, y0);
      _mm512_storeu_si512((void *)(d + 64), y1);
      _mm512_storeu_si512((void *)(d + 128), y2);
      _mm512_storeu_si512((void *)(d + 192), y3);
      d += 256;
    }
    x0 = fold512(x0, k, y0);
    x1 = fold512(x1, k, y1);
    x2 = fold512(x2, k, y2);
    x3 = fold512(x3, k, y3);
    p += 256, n -= 256;
  }
  k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)FOLD_64_HI, (long long)FOLD_64_LO));
  x0 = fold512(x0, k, x1);
  x0 = fold512(x0, k, x2);
  x0 = fold512(x0, k, x3);
  while (n >= 64) {
    __m512i y = _mm512_loadu_si512((const void *)p);
    if (copy) {
      _mm512_storeu_si512((void *)d, y);
      d += 64;
    }
    x0 = fold512(x0, k, y);
    p += 64, n -= 64;
  }
  /* The four 16-byte lanes of x0, in message order, into one. */
  a = _mm_xor_si128(fold128(_mm512_extracti32x4_epi32(x0, 0), FOLD_48_LO, FOLD_48_HI),
                    fold128(_mm512_extracti32x4_epi32(x0, 1), FOLD_32_LO, FOLD_32_HI));
  a = _mm_xor_si128(a, fold128(_mm512_extracti32x4_epi32(x0, 2), FOLD_16_LO, FOLD_16_HI));
  a = _mm_xor_si128(a, _mm512_extracti32x4_epi32(x0, 3));
  while (n >= 16) {
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (copy) {
      _mm_storeu_si128((__m128i *)(void *)d, y);
      d += 16;
    }
    a = _mm_xor_si128(fold128(a, FOLD_16_LO, FOLD_16_HI), y);
    p += 16, n -= 16;
  }
  c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(a));
  c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(a, 1));
  return copy ? (uint32_t)crc32c_copy_sse42_chain(c, d, p, n) : (uint32_t)crc32c_sse42_chain(c, p, n);
}

VPCLMUL_TARGET static uint32_t crc32c_copy_vpclmul(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n) {
  if (n < 256) return crc32c_copy_sse42_pclmul(crc, d, p, n);
  return crc32c_fold_vpclmul(crc, d, p, n, 1);
}

VPCLMUL_TARGET static uint32_t crc32c_vpclmul(uint32_t crc, const unsigned char *p, size_t n) {
  if (n < 256) return crc32c_sse42_pclmul(crc, p, n);
  return crc32c_fold_vpclmul(crc, NULL, p, n, 0);
}

/* 0: not yet asked, 1: portable, 2: SSE4.2, 3: SSE4.2 and PCLMULQDQ, 4: and
 * AVX-512F with VPCLMULQDQ.
 * Racing first callers store the same answer. */
static atomic_int crc32c_cpu;

static int crc32c_cpu_level(void) {
  int v = atomic_load_explicit(&crc32c_cpu, memory_order_relaxed);
  if (v == 0) {
    __builtin_cpu_init();
    v = !__builtin_cpu_supports("sse4.2")                                           ? 1
        : !__builtin_cpu_supports("pclmul")                                         ? 2
        : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") ? 4
                                                                                    : 3;
    atomic_store_explicit(&crc32c_cpu, v, memory_order_relaxed);
  }
  return v;
}
#endif

uint32_t hk_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  if (n == 0 || !data) return crc;
  crc = ~crc;
#ifdef CRC32C_HAVE_SSE42
  switch (crc32c_cpu_level()) {
    case 4: return ~crc32c_vpclmul(crc, data, n);
    case 3: return ~crc32c_sse42_pclmul(crc, data, n);
    case 2: return ~crc32c_sse42(crc, data, n);
    default: break;
  }
#endif
  return ~crc32c_portable(crc, data, n);
}

uint32_t hk__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n) {
  if (n == 0 || !dst || !src) return crc;
  crc = ~crc;
#ifdef CRC32C_HAVE_SSE42
  switch (crc32c_cpu_level()) {
    case 4: return ~crc32c_copy_vpclmul(crc, dst, src, n);
    case 3: return ~crc32c_copy_sse42_pclmul(crc, dst, src, n);
    case 2: return ~crc32c_copy_sse42(crc, dst, src, n);
    default: break;
  }
#endif
  return ~crc32c_copy_portable(crc, dst, src, n);
}

/* a * b modulo the polynomial, in the reflected order of the CRC register
 * (bit 31 is x^0, bit 0 is x^31). */
static uint32_t gf_multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; i++) {
    if (a & 0x80000000U) product ^= b;
    a <<= 1;
    b = (b >> 1) ^ (0x82F63B78U & (0U - (b & 1U))); /* b *= x */
  }
  return product;
}

/*
 * Feeding n zero bytes to the (uninverted) register multiplies it by
 * x^(8n), and the pre- and post-inversions of two CRCs cancel, so
 * crc(A B) = crc(A) * x^(8 len(B)) + crc(B). x^(8n) by squaring: at most
 * 64 squarings and 64 products, a microsecond or so, per join.
 */
uint32_t hk__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  uint32_t power = 0x00800000U; /* x^8 */
  uint32_t shift = 0x80000000U; /* x^0 */
  for (; len_b != 0; len_b >>= 1) {
    if (len_b & 1) shift = gf_multiply(shift, power);
    power = gf_multiply(power, power);
  }
  return gf_multiply(crc_a, shift) ^ crc_b;
}

/* The PCLMULQDQ path still reports "sse4.2": include/hooked/checkpoint.h
 * documents "sse4.2" and "portable" as the only answers. */
const char *hk_crc32c_implementation(void) {
#ifdef CRC32C_HAVE_SSE42
  if (crc32c_cpu_level() >= 2) return "sse4.2";
#endif
  return "portable";
}

int hk__crc32c_from_hex(const char *s, size_t n, uint32_t *out) {
  uint32_t v = 0;
  if (n != 8) return 0;
  for (size_t i = 0; i < 8; i++) {
    char c = s[i];
    int h = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (h < 0) return 0;
    v = v << 4 | (uint32_t)h;
  }
  *out = v;
  return 1;
}
