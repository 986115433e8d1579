// SPDX-License-Identifier: MIT
// The contracts of the mainnet-like benchmark (bench/mainnet.ts): small, written for this
// repository, shaped after the traffic that fills real blocks (tokens, a constant-product pair
// behind a router, an NFT, call chains, storage-heavy writers, a batching wallet for EIP-7702).
pragma solidity 0.8.37;

/// A fungible token. `mintMany` is open to anyone: the benchmark hands out balances with it.
contract Token {
    string public name;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_) {
        name = name_;
    }

    function mintMany(address[] calldata to, uint256 amount) external {
        for (uint256 i = 0; i < to.length; i++) {
            balanceOf[to[i]] += amount;
            emit Transfer(address(0), to[i], amount);
        }
        totalSupply += amount * to.length;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= value, "allowance");
            allowance[from][msg.sender] = allowed - value;
        }
        move(from, to, value);
        return true;
    }

    function move(address from, address to, uint256 value) private {
        uint256 balance = balanceOf[from];
        require(balance >= value, "balance");
        unchecked {
            balanceOf[from] = balance - value;
        }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}

/// A constant-product pair with a 0.3% fee: tokens are sent in first, then `swap` pays out what
/// keeps reserve0 * reserve1 from falling once the fee is taken off the input.
contract Pair {
    Token public immutable token0;
    Token public immutable token1;
    uint112 private reserve0;
    uint112 private reserve1;
    uint32 private lastTimestamp;
    uint256 public price0Cumulative;
    uint256 public price1Cumulative;
    uint256 public swaps;

    event Sync(uint112 reserve0, uint112 reserve1);
    event Swap(address indexed sender, uint256 in0, uint256 in1, uint256 out0, uint256 out1, address indexed to);

    constructor(Token a, Token b) {
        token0 = a;
        token1 = b;
    }

    function getReserves() external view returns (uint112, uint112, uint32) {
        return (reserve0, reserve1, lastTimestamp);
    }

    function sync() external {
        update(token0.balanceOf(address(this)), token1.balanceOf(address(this)), reserve0, reserve1);
    }

    function swap(uint256 out0, uint256 out1, address to) external {
        require(out0 > 0 || out1 > 0, "no output");
        (uint112 r0, uint112 r1) = (reserve0, reserve1);
        require(out0 < r0 && out1 < r1, "liquidity");
        if (out0 > 0) token0.transfer(to, out0);
        if (out1 > 0) token1.transfer(to, out1);
        uint256 b0 = token0.balanceOf(address(this));
        uint256 b1 = token1.balanceOf(address(this));
        uint256 in0 = b0 > r0 - out0 ? b0 - (r0 - out0) : 0;
        uint256 in1 = b1 > r1 - out1 ? b1 - (r1 - out1) : 0;
        require(in0 > 0 || in1 > 0, "no input");
        require((b0 * 1000 - in0 * 3) * (b1 * 1000 - in1 * 3) >= uint256(r0) * r1 * 1_000_000, "K");
        update(b0, b1, r0, r1);
        swaps += 1;
        emit Swap(msg.sender, in0, in1, out0, out1, to);
    }

    function update(uint256 b0, uint256 b1, uint112 r0, uint112 r1) private {
        require(b0 <= type(uint112).max && b1 <= type(uint112).max, "overflow");
        uint32 now32 = uint32(block.timestamp);
        uint32 elapsed = now32 - lastTimestamp;
        if (elapsed > 0 && r0 != 0 && r1 != 0) {
            price0Cumulative += (uint256(r1) << 112) / r0 * elapsed;
            price1Cumulative += (uint256(r0) << 112) / r1 * elapsed;
        }
        reserve0 = uint112(b0);
        reserve1 = uint112(b1);
        lastTimestamp = now32;
        emit Sync(reserve0, reserve1);
    }
}

/// Swaps an exact input along a path of pairs, each hop paying the next pair directly.
contract Router {
    function amountOut(uint256 amountIn, uint256 reserveIn, uint256 reserveOut) public pure returns (uint256) {
        uint256 withFee = amountIn * 997;
        return (withFee * reserveOut) / (reserveIn * 1000 + withFee);
    }

    function swapExactIn(uint256 amountIn, uint256 minOut, Pair[] calldata path, Token tokenIn, address to)
        external
        returns (uint256 out)
    {
        require(tokenIn.transferFrom(msg.sender, address(path[0]), amountIn), "pay");
        out = amountIn;
        Token next = tokenIn;
        for (uint256 i = 0; i < path.length; i++) {
            Pair pair = path[i];
            (uint112 r0, uint112 r1,) = pair.getReserves();
            bool zeroIn = address(pair.token0()) == address(next);
            out = amountOut(out, zeroIn ? r0 : r1, zeroIn ? r1 : r0);
            address receiver = i + 1 < path.length ? address(path[i + 1]) : to;
            pair.swap(zeroIn ? 0 : out, zeroIn ? out : 0, receiver);
            next = zeroIn ? pair.token1() : pair.token0();
        }
        require(out >= minOut, "slippage");
    }
}

/// A paid mint: a hot counter, an owner, a balance and a seed per token.
contract Collectible {
    uint256 public nextId;
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    mapping(uint256 => bytes32) public seedOf;

    event Transfer(address indexed from, address indexed to, uint256 indexed id);

    function mint() external payable returns (uint256 id) {
        require(msg.value == 0.01 ether, "price");
        id = nextId++;
        ownerOf[id] = msg.sender;
        balanceOf[msg.sender] += 1;
        seedOf[id] = keccak256(abi.encode(msg.sender, id, block.prevrandao));
        emit Transfer(address(0), msg.sender, id);
    }
}

/// One link of a call chain: counts the visit, logs it and calls the rest of the chain.
contract Hop {
    mapping(uint256 => uint256) public visits;

    event Hopped(uint256 remaining, address from);

    function hop(Hop[] calldata rest, uint256 key) external returns (uint256) {
        visits[key] += 1;
        emit Hopped(rest.length, msg.sender);
        if (rest.length == 0) return key;
        return rest[0].hop(rest[1:], key + 1) + 1;
    }
}

/// Storage-heavy work: many slots per call, and a loop that runs until its gas is gone.
contract Ledger {
    mapping(address => mapping(uint256 => uint256)) public cells;

    function write(uint256 start, uint256 count, uint256 value) external {
        for (uint256 i = 0; i < count; i++) {
            cells[msg.sender][start + i] = value + i;
        }
    }

    function spin() external {
        for (uint256 i = 0;; i++) {
            cells[msg.sender][i] = uint256(keccak256(abi.encode(i)));
        }
    }
}

/// A wallet an EOA delegates to (EIP-7702): the account itself may run a batch of calls.
contract BatchWallet {
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    event Executed(uint256 calls);

    function execute(Call[] calldata calls) external payable {
        require(msg.sender == address(this), "only self");
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].to.call{value: calls[i].value}(calls[i].data);
            if (!ok) {
                assembly {
                    revert(add(ret, 32), mload(ret))
                }
            }
        }
        emit Executed(calls.length);
    }
}
