#include <iostream>

int main() {
    std::cout << "conflux\n";
    return 0;
}
